import { ZSamplingParams } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { sampleToken } from "./sampling.ts";
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
