import { describe, expect, it } from "vitest";
import { fromTinkerApiKey, tinkerApiKey } from "./api-keys.ts";
import {
  formatSamplerHandle,
  formatTinkerPath,
  parseSamplerHandle,
  parseTinkerPath,
  ZPolicyRef,
} from "./handles.ts";
import { ZAdamParams, ZLossFnConfig } from "./losses.ts";
import { ZSamplingParams } from "./sampling.ts";

describe("policy handles", () => {
  it("round-trip team, adapter and version", () => {
    const handle = formatSamplerHandle({ team: "demo", adapter: "cm1abc", version: 12 });
    expect(handle).toBe("opentinker://demo/cm1abc/sampler/12");
    expect(parseSamplerHandle(handle)).toEqual({ team: "demo", adapter: "cm1abc", version: 12 });
  });

  it("refuse anything else, naming the expected form", () => {
    for (const bad of [
      "opentinker://demo/a/sampler/0",
      "tinker://demo/a/sampler/1",
      "opentinker://demo/a/weights/1",
    ]) {
      expect(() => parseSamplerHandle(bad)).toThrow(
        /expected opentinker:\/\/<team>\/<adapter>\/sampler\/<version>/,
      );
    }
    expect(ZPolicyRef.safeParse({ weights: [1, 2] }).success).toBe(false);
  });
});

describe("Tinker paths and keys", () => {
  it("round-trip a model's sampler weights and weights, and refuse other forms", () => {
    const path = formatTinkerPath({ model: "cm1abc", kind: "sampler_weights", name: "step-3" });
    expect(path).toBe("tinker://cm1abc/sampler_weights/step-3");
    expect(parseTinkerPath(path)).toEqual({ model: "cm1abc", kind: "sampler_weights", name: "step-3" });
    expect(parseTinkerPath("tinker://cm1abc/weights/w1")?.kind).toBe("weights");
    for (const bad of [
      "tinker://cm1abc/sampler/1",
      "tinker://a/b/sampler_weights/x",
      "tinker://m/weights/..",
      "opentinker://t/a/sampler/1",
    ])
      expect(parseTinkerPath(bad)).toBeNull();
  });

  it("a Tinker key is one of ours behind tml-", () => {
    expect(tinkerApiKey("ot_abc")).toBe("tml-ot_abc");
    expect(fromTinkerApiKey("tml-ot_abc")).toBe("ot_abc");
    expect(fromTinkerApiKey("ot_abc")).toBeNull();
  });
});

describe("defaults", () => {
  it("AdamW defaults are Tinker's", () => {
    expect(ZAdamParams.parse({})).toEqual({
      learningRate: 1e-4,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-12,
      weightDecay: 0,
      gradClipNorm: 0,
    });
  });

  it("PPO/CISPO clip to [0.8, 1.2] and DRO's beta is 0.05 by default; an inverted range or negative beta is refused", () => {
    expect(ZLossFnConfig.parse({})).toEqual({
      clipLowThreshold: 0.8,
      clipHighThreshold: 1.2,
      beta: 0.05,
      referenceKl: 0,
    });
    expect(ZLossFnConfig.safeParse({ clipLowThreshold: 1.5 }).success).toBe(false);
    expect(ZLossFnConfig.safeParse({ beta: -0.1 }).success).toBe(false);
    // referenceKl (off by default) must be a finite number ≥ 0, never a string.
    for (const bad of [-1, Number.POSITIVE_INFINITY, "0.3"]) {
      const parsed = ZLossFnConfig.safeParse({ referenceKl: bad });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(["referenceKl"]);
    }
  });

  it("sampling parameters validate ranges", () => {
    expect(ZSamplingParams.parse({ maxTokens: 8 })).toMatchObject({
      temperature: 1,
      topK: -1,
      topP: 1,
      minP: 0,
      stop: [],
    });
    expect(ZSamplingParams.safeParse({ maxTokens: 0 }).success).toBe(false);
    expect(ZSamplingParams.safeParse({ maxTokens: 4, topP: 0 }).success).toBe(false);
    expect(ZSamplingParams.parse({ maxTokens: 4, minP: 1 }).minP).toBe(1);
    for (const minP of [-0.1, 1.5, Number.NaN])
      expect(ZSamplingParams.safeParse({ maxTokens: 4, minP }).success).toBe(false);
  });
});
