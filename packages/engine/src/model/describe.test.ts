import { describe, expect, it } from "vitest";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { QWEN25_05B_SHAPE, randomBaseModel } from "../testing/random-model.ts";
import type { ModelConfig } from "./config.ts";
import { trainableSizes } from "./describe.ts";

const count = (tensors: readonly { shape: number[] }[]) =>
  tensors.reduce((sum, t) => sum + t.shape.reduce((a, b) => a * b, 1), 0);

describe("trainable sizes (what placement charges an adapter)", () => {
  const config: ModelConfig = {
    ...QWEN25_05B_SHAPE,
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 8,
    intermediateSize: 48,
    vocabSize: 64,
  };
  const base = randomBaseModel(config);
  const sizes = trainableSizes(config);

  it("equal the parameters of the LoRA policy the engine builds, per module and rank", () => {
    const lora = (trainAttn: boolean, trainMlp: boolean, trainUnembed: boolean) =>
      count(
        createLoraPolicy(base, { rank: 3, alpha: 6, trainAttn, trainMlp, trainUnembed, seed: 0 }).tensors,
      );
    expect(lora(true, false, false)).toBe(3 * sizes.attnParamsPerRank);
    expect(lora(false, true, false)).toBe(3 * sizes.mlpParamsPerRank);
    expect(lora(true, true, true)).toBe(
      3 * (sizes.attnParamsPerRank + sizes.mlpParamsPerRank + sizes.unembedParamsPerRank),
    );
  });

  it("count every parameter a full-parameter policy trains", () => {
    expect(count(createFullPolicy(base).tensors)).toBe(sizes.parameters);
  });
});
