import { refSampleToken } from "@opentinker/kernels/reference";
import { ZSamplingParams } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { defaultBackend } from "../base-model.ts";
import { Rng } from "../rng.ts";
import { sampleToken, sampleTokens, type TokenDraw } from "./sampling.ts";
import { stopChecker } from "./stop.ts";

const params = (p: Record<string, unknown>) => ZSamplingParams.parse({ maxTokens: 4, ...p });
const logits = Float32Array.from([1, 3, 2, 0.5, 3]);
const lse = Math.log(logits.reduce((s, l) => s + Math.exp(l), 0));

describe("sampleToken", () => {
  it("temperature 0 is greedy (ties to the lower id) and reports the temperature-1 logprob", () => {
    const out = sampleToken(logits, params({ temperature: 0 }), new Rng(1));
    expect(out.token).toBe(1);
    expect(out.logprob).toBeCloseTo(3 - lse, 6);
  });

  it("the logprob is always under temperature 1, whatever the sampling temperature", () => {
    for (const temperature of [0.3, 1, 2.5]) {
      const out = sampleToken(logits, params({ temperature }), new Rng(7));
      expect(out.logprob).toBeCloseTo((logits[out.token] as number) - lse, 6);
    }
  });

  it("the same seed gives the same tokens; frequencies follow softmax at temperature 1", () => {
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 20 }, () => sampleToken(logits, params({}), rng).token);
    };
    expect(draw(5)).toEqual(draw(5));
    const counts = new Array(5).fill(0);
    const rng = new Rng(11);
    for (let i = 0; i < 20000; i++) counts[sampleToken(logits, params({}), rng).token]++;
    counts.forEach((c, i) => {
      expect(c / 20000).toBeCloseTo(Math.exp((logits[i] as number) - lse), 1);
    });
  });

  it("top-k keeps only the k most likely tokens, top-p the smallest nucleus", () => {
    const rng = new Rng(3);
    for (let i = 0; i < 200; i++)
      expect([1, 4]).toContain(sampleToken(logits, params({ topK: 2 }), rng).token);
    // p(1) = p(4) ≈ 0.39 each: a nucleus of 0.5 needs both, and only them.
    for (let i = 0; i < 200; i++)
      expect([1, 4]).toContain(sampleToken(logits, params({ topP: 0.5 }), rng).token);
    // p(2) / p(1) = e⁻¹ ≈ 0.37: a min-p of 0.5 keeps only the two most likely.
    for (let i = 0; i < 200; i++)
      expect([1, 4]).toContain(sampleToken(logits, params({ minP: 0.5 }), rng).token);
  });

  it("each draw takes one number from its seeded stream and picks the float64 reference's token", () => {
    const cases = [
      {},
      { temperature: 0 },
      { temperature: 0.7 },
      { topK: 3 },
      { topK: 2, temperature: 1.3 },
      { topP: 0.8 },
      { minP: 0.2, temperature: 0.5 },
      { topK: 4, topP: 0.9, minP: 0.1, temperature: 0.9 },
    ].map(params);
    for (const p of cases) {
      for (let seed = 0; seed < 50; seed++) {
        const rng = new Rng(seed);
        const mirror = new Rng(seed);
        for (let i = 0; i < 4; i++) {
          const out = sampleToken(logits, p, rng);
          expect(out.token).toBe(refSampleToken(logits, p, mirror.next()));
          expect(out.logprob).toBeCloseTo((logits[out.token] as number) - lse, 6);
        }
      }
    }
  });

  it("one call samples a batch of rows: the same tokens as one draw at a time", () => {
    const rows = Float32Array.from([
      ...logits,
      ...logits.map((l) => -l),
      ...logits.map((l, i) => l * (i % 2)),
    ]);
    const cases = [{}, { topK: 2 }, { topP: 0.6, temperature: 0.5 }, { minP: 0.3 }].map(params);
    const draws = (seed: number): TokenDraw[] =>
      Array.from({ length: 12 }, (_, i) => ({
        row: i % 3,
        params: cases[i % cases.length] as (typeof cases)[number],
        rng: new Rng(seed + i),
      }));
    const be = defaultBackend();
    const batched = sampleTokens(be, be.upload(rows, [3, logits.length]), logits.length, draws(40));
    const single = draws(40).map((d) =>
      sampleToken(rows.subarray(d.row * logits.length, (d.row + 1) * logits.length), d.params, d.rng),
    );
    expect(batched.map((s) => s.token)).toEqual(single.map((s) => s.token));
    expect(batched.map((s) => s.logprob)).toEqual(single.map((s) => s.logprob));
  });
});

describe("stopChecker", () => {
  const detok = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + i)).join("") };
  it("stops on eos, on a stop id, on a stop string in the decoded tail, else at maxTokens", () => {
    const check = stopChecker(params({ stop: ["cd"] }), [25], detok);
    expect(check([0, 1])).toBeNull();
    expect(check([0, 2, 3])).toBe("stop");
    expect(check([25])).toBe("stop");
    expect(check([0, 0, 0, 0])).toBe("length");
    expect(stopChecker(params({ stop: [7] }), [], detok)([1, 7])).toBe("stop");
  });
});
