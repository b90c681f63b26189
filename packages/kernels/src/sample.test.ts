import { describe, expect, it } from "vitest";
import { sampleRows } from "./ops/sample.ts";
import { rng } from "./test-utils.ts";

const logits = Float32Array.from([1, 3, 2, 0.5, 3, -1, 0, 2.5]);
const V = 4;

function softmax(row: number[], t: number): number[] {
  const m = Math.max(...row);
  const e = row.map((x) => Math.exp((x - m) / t));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

describe("sampleRows", () => {
  it("temperature 0 takes the argmax; lse is the temperature-1 log-sum-exp", () => {
    const out = sampleRows(logits, V, Float32Array.from([0, 0]), Float64Array.from([0.5, 0.5]));
    expect(Array.from(out.tokens)).toEqual([1, 0]);
    expect(out.lse[0]).toBeCloseTo(Math.log([1, 3, 2, 0.5].reduce((s, x) => s + Math.exp(x), 0)), 5);
  });

  it("inverse-CDF sampling: the uniform number picks the token whose cumulative mass covers it", () => {
    for (const t of [1, 0.5, 2]) {
      const p = softmax([1, 3, 2, 0.5], t);
      let cumulative = 0;
      p.forEach((mass, token) => {
        const u = cumulative + mass / 2;
        cumulative += mass;
        const out = sampleRows(logits.subarray(0, V), V, Float32Array.from([t]), Float64Array.from([u]));
        expect(out.tokens[0]).toBe(token);
      });
    }
  });

  it("frequencies follow the softmax over many rows", () => {
    const random = rng(1);
    const n = 20000;
    const rows = new Float32Array(n * V);
    for (let i = 0; i < n; i++) rows.set(logits.subarray(0, V), i * V);
    const uniforms = Float64Array.from({ length: n }, () => random());
    const out = sampleRows(rows, V, new Float32Array(n).fill(1), uniforms);
    const counts = [0, 0, 0, 0];
    for (const t of out.tokens) counts[t] = (counts[t] as number) + 1;
    softmax([1, 3, 2, 0.5], 1).forEach((p, i) => {
      expect((counts[i] as number) / n).toBeCloseTo(p, 1);
    });
  });

  it("refuses negative temperatures and uniforms outside [0, 1) by name", () => {
    expect(() =>
      sampleRows(logits.subarray(0, V), V, Float32Array.from([-1]), Float64Array.from([0.5])),
    ).toThrow(/sampleRows: temperatures \[0\] must be a finite number/);
    expect(() =>
      sampleRows(logits.subarray(0, V), V, Float32Array.from([1]), Float64Array.from([1])),
    ).toThrow(/sampleRows: uniforms \[0\] must be in \[0, 1\)/);
  });
});
