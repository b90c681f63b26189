// A base model with random weights, built in memory (no files): for benchmarks
// on real model shapes such as Qwen2.5-0.5B without its weights.
import { type BaseModel, baseModelFrom } from "../base-model.ts";
import type { ModelConfig } from "../model/index.ts";
import { assembleModelWeights, modelTensorSpecs } from "../model/weights.ts";
import { Rng } from "../rng.ts";

export const QWEN25_05B_SHAPE: ModelConfig = {
  architecture: "qwen2",
  hiddenSize: 896,
  intermediateSize: 4864,
  numLayers: 24,
  numHeads: 14,
  numKvHeads: 2,
  headDim: 64,
  vocabSize: 151936,
  rmsNormEps: 1e-6,
  ropeTheta: 1000000,
  ropeScaling: null,
  maxPositionEmbeddings: 32768,
  tieWordEmbeddings: true,
  attentionBias: true,
  bosTokenId: null,
  eosTokenIds: [151643],
  torchDtype: "float32",
};

/** About 10M parameters: a model that trains in seconds on two cores. */
export const SMALL_10M_SHAPE: ModelConfig = {
  ...QWEN25_05B_SHAPE,
  hiddenSize: 256,
  intermediateSize: 768,
  numLayers: 8,
  numHeads: 8,
  numKvHeads: 4,
  headDim: 32,
  vocabSize: 16384,
  eosTokenIds: [0],
};

export function parameterCount(config: ModelConfig): number {
  return modelTensorSpecs(config).reduce((sum, spec) => sum + spec.shape.reduce((a, b) => a * b, 1), 0);
}

/** Normal(0, scale) weights, norms at 1, biases at 0. */
export function randomBaseModel(config: ModelConfig, seed = 1, scale = 0.02, name = "random"): BaseModel {
  const rng = new Rng(seed);
  const tensors = new Map<string, Float32Array>();
  for (const spec of modelTensorSpecs(config)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (spec.name.endsWith("norm.weight")) data.fill(1);
    else if (!spec.name.endsWith(".bias")) for (let i = 0; i < size; i++) data[i] = rng.normal() * scale;
    tensors.set(spec.name, data);
  }
  const weights = assembleModelWeights(config, (spec) => {
    const data = tensors.get(spec.name);
    if (!data) throw new Error(`randomBaseModel: no tensor ${spec.name}`);
    return data;
  });
  return baseModelFrom(name, { config, weights });
}
