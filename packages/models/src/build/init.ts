// The starting point of pretraining: a Llama-family config and seeded random
// weights (GPT-2 style: N(0, 0.02), the residual-branch outputs scaled down by
// √(2·layers) so the residual stream starts near unit scale; norms at 1).
import { assembleModelWeights, type ModelConfig, type ModelWeights, Rng } from "@opentinker/engine";

/** The sizes a recipe chooses; the rest of the config follows from them and the tokenizer. */
export type ModelShape = Pick<
  ModelConfig,
  "hiddenSize" | "intermediateSize" | "numLayers" | "numHeads" | "numKvHeads" | "maxPositionEmbeddings"
>;

export interface TokenIds {
  vocabSize: number;
  endOfText: number;
  imEnd: number;
}

export function textModelConfig(shape: ModelShape, tokens: TokenIds): ModelConfig {
  if (shape.hiddenSize % shape.numHeads !== 0)
    throw new RangeError(`hiddenSize ${shape.hiddenSize} is not divisible by numHeads ${shape.numHeads}`);
  if (shape.numHeads % shape.numKvHeads !== 0)
    throw new RangeError(`numHeads ${shape.numHeads} is not a multiple of numKvHeads ${shape.numKvHeads}`);
  return {
    architecture: "llama",
    hiddenSize: shape.hiddenSize,
    intermediateSize: shape.intermediateSize,
    numLayers: shape.numLayers,
    numHeads: shape.numHeads,
    numKvHeads: shape.numKvHeads,
    headDim: shape.hiddenSize / shape.numHeads,
    vocabSize: tokens.vocabSize,
    rmsNormEps: 1e-6,
    ropeTheta: 10_000,
    ropeScaling: null,
    maxPositionEmbeddings: shape.maxPositionEmbeddings,
    tieWordEmbeddings: true,
    attentionBias: false,
    bosTokenId: tokens.endOfText,
    eosTokenIds: [tokens.imEnd],
    torchDtype: "float32",
  };
}

export function initialWeights(config: ModelConfig, seed: number): ModelWeights {
  const rng = new Rng(seed);
  const std = 0.02;
  const residualStd = std / Math.sqrt(2 * config.numLayers);
  return assembleModelWeights(config, ({ name, shape }) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (name.endsWith("norm.weight")) return data.fill(1);
    const scale = name.endsWith("o_proj.weight") || name.endsWith("down_proj.weight") ? residualStd : std;
    for (let i = 0; i < data.length; i++) data[i] = scale * rng.normal();
    return data;
  });
}
