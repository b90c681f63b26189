import { describe, expect, it } from "vitest";
import { type SampleDraws, sampleDraws, sampleRows, scoreRows } from "./ops/sample.ts";
import {
  type RefSampleParams,
  refDrawFrom,
  refLogprob,
  refSampleDistribution,
  refSampleToken,
  refTopK,
} from "./reference/sample.ts";
import { randomF32, rng } from "./test-utils.ts";

const OFF: RefSampleParams = { temperature: 1, topK: -1, topP: 1, minP: 0 };

/** Draws of one logits row, all with params p, at the given uniform numbers. */
function drawsOf(p: RefSampleParams, uniforms: readonly number[], rowOf?: readonly number[]): SampleDraws {
  const d = sampleDraws(uniforms.length);
  d.temperatures.fill(p.temperature);
  d.topK.fill(p.topK);
  d.topP.fill(p.topP);
  d.minP.fill(p.minP);
  d.uniforms.set(uniforms);
  if (rowOf) d.rowOf.set(rowOf);
  return d;
}

function tokensOf(logits: Float32Array, p: RefSampleParams, uniforms: readonly number[]): number[] {
  return Array.from(sampleRows(logits, logits.length, drawsOf(p, uniforms)).tokens);
}

/** The midpoint of each kept token's interval of the inverse CDF: u there must pick exactly that token. */
function midpoints(probs: readonly number[]): number[] {
  let cumulative = 0;
  return probs.map((mass) => {
    const u = cumulative + mass / 2;
    cumulative += mass;
    return u;
  });
}

/** The native draw walks exactly the reference's kept tokens, in the reference's order. */
function expectSameDistribution(logits: Float32Array, p: RefSampleParams): void {
  const ref = refSampleDistribution(logits, p);
  expect(tokensOf(logits, p, midpoints(ref.probs))).toEqual(ref.tokens);
}

const SMALL = Float32Array.from([1, 3, 2, 0.5, 3, -1, 0, 2.5]);

describe("sampleRows", () => {
  it("temperature 0 takes the argmax (ties to the lower id) whatever the filters; logprobs are at temperature 1", () => {
    for (const p of [
      { ...OFF, temperature: 0 },
      { temperature: 0, topK: 3, topP: 0.2, minP: 0.9 },
    ]) {
      const out = sampleRows(SMALL, SMALL.length, drawsOf(p, [0.99]));
      expect(out.tokens[0]).toBe(1);
      expect(out.logprobs[0]).toBeCloseTo(refLogprob(SMALL, 1), 6);
    }
  });

  it("without a filter, u walks softmax(logits / T) in vocabulary order", () => {
    for (const temperature of [1, 0.5, 2, 0.7]) expectSameDistribution(SMALL, { ...OFF, temperature });
  });

  it("top-k, top-p and min-p keep exactly the reference's tokens, in order of logit", () => {
    const cases: RefSampleParams[] = [
      { ...OFF, topK: 1 },
      { ...OFF, topK: 3 },
      { ...OFF, topK: 8 },
      { ...OFF, topK: 100 },
      { ...OFF, topP: 0.5 },
      { ...OFF, topP: 0.9, temperature: 0.6 },
      { ...OFF, topP: 0.999 },
      { ...OFF, minP: 0.3 },
      { ...OFF, minP: 1 },
      { ...OFF, minP: 1, temperature: 1.5 },
      { ...OFF, minP: 1, temperature: 0.7 },
      { temperature: 1.5, topK: 5, topP: 0.8, minP: 0.1 },
      { temperature: 0.8, topK: 4, topP: 0.95, minP: 0.05 },
    ];
    for (const p of cases) expectSameDistribution(SMALL, p);
  });

  it("ties at the top-k boundary keep the lower ids", () => {
    const logits = Float32Array.from([1, 2, 2, 2, 0, 2]);
    expect(refSampleDistribution(logits, { ...OFF, topK: 2 }).tokens).toEqual([1, 2]);
    expectSameDistribution(logits, { ...OFF, topK: 2 });
    expectSameDistribution(logits, { ...OFF, topK: 3, temperature: 0.3 });
  });

  it("-inf logits are never drawn, whatever the filters and however close u is to 1", () => {
    const logits = Float32Array.from([-Infinity, 1, -Infinity, 0.5, -Infinity]);
    const u = [0, 0.5, 0.999999999, 1 - 2 ** -53];
    for (const p of [OFF, { ...OFF, topK: 5 }, { ...OFF, topP: 0.999999999 }, { ...OFF, minP: 1e-9 }]) {
      for (const token of tokensOf(logits, p, u)) expect([1, 3]).toContain(token);
      expectSameDistribution(logits, p);
    }
  });

  it("a row without a finite logit, or with NaN ones, still returns a token in range", () => {
    const dead = Float32Array.from([-Infinity, -Infinity, -Infinity]);
    expect(tokensOf(dead, { ...OFF, topP: 0.5 }, [0.3])).toEqual([0]);
    expect(tokensOf(dead, OFF, [0.3])).toEqual([0]);
    const nan = Float32Array.from([1, Number.NaN, 2, Number.NaN]);
    for (const p of [
      { ...OFF, topK: 2 },
      { ...OFF, topP: 0.9 },
    ])
      for (const t of tokensOf(nan, p, [0.1, 0.6, 0.95])) expect([0, 2]).toContain(t);
  });

  it("frequencies of many draws sharing one row follow the reference's probabilities", () => {
    const random = rng(1);
    const n = 40_000;
    for (const p of [OFF, { temperature: 0.7, topK: 4, topP: 0.9, minP: 0.05 }]) {
      const uniforms = Array.from({ length: n }, () => random());
      const out = sampleRows(SMALL, SMALL.length, drawsOf(p, uniforms));
      const counts = new Map<number, number>();
      for (const t of out.tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
      const ref = refSampleDistribution(SMALL, p);
      expect([...counts.keys()].sort()).toEqual([...ref.tokens].sort());
      ref.tokens.forEach((token, i) => {
        const prob = ref.probs[i] as number;
        const sd = Math.sqrt((prob * (1 - prob)) / n);
        expect(Math.abs((counts.get(token) ?? 0) / n - prob)).toBeLessThan(5 * sd);
      });
    }
  });

  it("on a 152K vocabulary, partial selection keeps the reference's exact sets and draws its tokens", () => {
    const V = 151_936;
    const random = rng(7);
    const logits = randomF32(V, random, 8);
    logits[12_345] = logits[54_321] = 9; // a tie at the top
    for (const p of [
      { ...OFF, topK: 50 },
      { ...OFF, topP: 0.5, temperature: 0.5 },
      { ...OFF, minP: 0.2 },
      { temperature: 0.9, topK: 40, topP: 0.95, minP: 0.01 },
      // Nuclei of thousands of tokens: the radix select's bins, over the whole row and over a top-k.
      { ...OFF, topP: 0.95 },
      { ...OFF, topK: 5000, topP: 0.9, temperature: 1.2 },
    ]) {
      const ref = refSampleDistribution(logits, p);
      // The first and last kept tokens (the set's boundary), a sample between, and u
      // just below 1 (which would find any extra token at the end of the native set).
      const all = midpoints(ref.probs).map((u, i) => ({ u, token: ref.tokens[i] as number }));
      const picked = [...all.slice(0, 40), ...all.filter((_, i) => i % 97 === 0), ...all.slice(-40)];
      picked.push({ u: 1 - 1e-12, token: ref.tokens[ref.tokens.length - 1] as number });
      const u = picked.map((x) => x.u);
      expect(tokensOf(logits, p, u)).toEqual(picked.map((x) => x.token));
      const uniforms = Array.from({ length: 64 }, () => random());
      expect(tokensOf(logits, p, uniforms)).toEqual(uniforms.map((u) => refDrawFrom(ref, u)));
    }
  });

  it("one call serves a batch: each draw reads its own row with its own parameters", () => {
    const random = rng(3);
    const V = 300;
    const rows = 4;
    const logits = randomF32(rows * V, random, 4);
    const params: RefSampleParams[] = [
      OFF,
      { ...OFF, temperature: 0 },
      { ...OFF, topK: 7 },
      { temperature: 0.5, topK: -1, topP: 0.7, minP: 0 },
      { ...OFF, minP: 0.1 },
      { ...OFF, topK: 7 },
    ];
    const rowOf = [0, 1, 2, 3, 0, 2];
    const d = sampleDraws(params.length);
    params.forEach((p, i) => {
      d.rowOf[i] = rowOf[i] as number;
      d.temperatures[i] = p.temperature;
      d.topK[i] = p.topK;
      d.topP[i] = p.topP;
      d.minP[i] = p.minP;
      d.uniforms[i] = random();
    });
    const out = sampleRows(logits, V, d);
    params.forEach((p, i) => {
      const row = logits.subarray((rowOf[i] as number) * V, ((rowOf[i] as number) + 1) * V);
      expect(out.tokens[i]).toBe(refSampleToken(row, p, d.uniforms[i] as number));
      expect(out.logprobs[i]).toBeCloseTo(refLogprob(row, out.tokens[i] as number), 5);
    });
  });

  it("refuses bad rows, parameters and uniform numbers by name", () => {
    const bad = (patch: (d: SampleDraws) => void) => {
      const d = drawsOf(OFF, [0.5]);
      patch(d);
      return () => sampleRows(SMALL, SMALL.length, d);
    };
    expect(bad((d) => d.rowOf.fill(1))).toThrow(/sampleRows: rowOf\[0\] is 1, expected \[0, 1\)/);
    expect(bad((d) => d.temperatures.fill(-1))).toThrow(
      /sampleRows: temperatures\[0\] must be a finite number/,
    );
    expect(bad((d) => d.topP.fill(0))).toThrow(/sampleRows: topP\[0\] must be in \(0, 1\]/);
    expect(bad((d) => d.minP.fill(1.5))).toThrow(/sampleRows: minP\[0\] must be in \[0, 1\]/);
    expect(bad((d) => d.uniforms.fill(1))).toThrow(/sampleRows: uniforms\[0\] must be in \[0, 1\)/);
    expect(() => sampleRows(SMALL.subarray(0, 7), 4, drawsOf(OFF, [0.5]))).toThrow(
      /sampleRows: logits has length 7/,
    );
  });
});

describe("scoreRows", () => {
  /** The native top-k of row r as [id, logprob] pairs. */
  const topOf = (out: ReturnType<typeof scoreRows>, r: number, k: number) =>
    Array.from({ length: k }, (_, j) => [out.topIds[r * k + j], out.topLogprobs[r * k + j]]);

  it("scores each row's target and its k most likely tokens like a float64 sort of the whole row", () => {
    const random = rng(11);
    const V = 500;
    const rows = 5;
    const logits = randomF32(rows * V, random, 6);
    // Ties at the top and at the k boundary of row 1 go to the lower ids.
    logits[V + 7] = logits[V + 300] = logits[V + 42] = 9;
    logits[V + 99] = logits[V + 5] = 8;
    const targets = Int32Array.from([3, 300, 0, 499, 250]);
    for (const k of [0, 1, 4, 20, V]) {
      const out = scoreRows(logits, V, targets, k);
      for (let r = 0; r < rows; r++) {
        const row = logits.subarray(r * V, (r + 1) * V);
        expect(out.logprobs[r]).toBeCloseTo(refLogprob(row, targets[r] as number), 5);
        const ref = refTopK(row, k);
        const got = topOf(out, r, k);
        expect(got.map(([id]) => id)).toEqual(ref.map(([id]) => id));
        for (const [j, [, lp]] of got.entries()) expect(lp).toBeCloseTo(ref[j]?.[1] as number, 5);
      }
    }
    const tied = topOf(scoreRows(logits, V, targets, 5), 1, 5).map(([id]) => id);
    expect(tied).toEqual([7, 42, 300, 5, 99]);
  });

  it("a target's score equals the logprob sampleRows reports when it draws that token", () => {
    const random = rng(12);
    const V = 1000;
    const logits = randomF32(2 * V, random, 5);
    const greedy = drawsOf({ ...OFF, temperature: 0 }, [0, 0], [0, 1]);
    const drawn = sampleRows(logits, V, greedy);
    const scored = scoreRows(logits, V, drawn.tokens, 1);
    expect(Array.from(scored.logprobs)).toEqual(Array.from(drawn.logprobs));
    expect(Array.from(scored.topIds)).toEqual(Array.from(drawn.tokens));
  });

  it("on a 152K vocabulary, the top 20 of each row are the reference's, in its order", () => {
    const V = 151_936;
    const random = rng(13);
    const rows = 3;
    const logits = randomF32(rows * V, random, 8);
    logits[100] = logits[150_000] = 12; // a tie at the top of row 0
    logits[V + 70_000] = Number.NaN; // orders as -inf; its row has no distribution (NaN logprobs)
    logits[2 * V + 5] = Number.NEGATIVE_INFINITY;
    const targets = Int32Array.from([150_000, 70_001, 5]);
    const k = 20;
    const out = scoreRows(logits, V, targets, k);
    for (let r = 0; r < rows; r++) {
      const row = logits.subarray(r * V, (r + 1) * V);
      const ref = refTopK(row, k);
      const got = topOf(out, r, k);
      expect(got.map(([id]) => id)).toEqual(ref.map(([id]) => id));
      const close = (a: number, b: number) =>
        Number.isNaN(b) ? Number.isNaN(a) : a === b || Math.abs(a - b) < 1e-5;
      for (const [j, [, lp]] of got.entries()) expect(close(lp as number, ref[j]?.[1] as number)).toBe(true);
      expect(close(out.logprobs[r] as number, refLogprob(row, targets[r] as number))).toBe(true);
    }
    expect(out.topIds.subarray(k, 2 * k)).not.toContain(70_000);
    expect(out.logprobs[2]).toBe(Number.NEGATIVE_INFINITY);
  });

  it("refuses bad targets, k and output lengths by name", () => {
    const one = Int32Array.from([1]);
    expect(() => scoreRows(SMALL, SMALL.length, Int32Array.from([8]), 1)).toThrow(
      /scoreRows: targets\[0\] is 8, expected \[0, 8\)/,
    );
    expect(() => scoreRows(SMALL, SMALL.length, one, 9)).toThrow(/scoreRows: k must be in \[0, 8\], got 9/);
    expect(() => scoreRows(SMALL.subarray(0, 7), SMALL.length, one, 1)).toThrow(
      /scoreRows: logits has length 7/,
    );
  });
});
