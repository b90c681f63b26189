// Writes a small random Llama / Qwen2 model in the real Hugging Face layout, so
// tests load it through the same code as a downloaded model. Deterministic for a
// given seed: the same options give byte-identical files.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { seededRandom } from "@opentinker/protocol";
import type { Architecture, ModelConfig } from "../model/config.ts";
import { type WrittenFile, writeJsonFile } from "../model/files.ts";
import { type FloatDtype, roundToDtype } from "../model/float-convert.ts";
import { assembleModelWeights, type ModelWeights, modelTensorSpecs } from "../model/weights.ts";
import { writeModelConfig, writeModelWeights } from "../model/write-model.ts";
import { tinyTokenizerFiles } from "./tiny-tokenizer.ts";

export interface TinyModelOptions {
  architecture?: Architecture;
  hiddenSize?: number;
  numLayers?: number;
  numHeads?: number;
  numKvHeads?: number;
  intermediateSize?: number;
  /** At least the tokenizer's size (the default); more pads the embedding like real models do. */
  vocabSize?: number;
  tieWordEmbeddings?: boolean;
  /** Llama only: q/k/v biases (Qwen2 always has them). */
  attentionBias?: boolean;
  maxPositionEmbeddings?: number;
  dtype?: FloatDtype;
  /** 1 writes model.safetensors; more writes that many shards and an index. */
  shards?: number;
  seed?: number;
  /** Standard deviation of the random weights (norm weights are 1 ± this). */
  scale?: number;
  /**
   * A vision part with random weights: S×S images in P×P patches, (S/P)² soft
   * tokens each; the tokenizer gains `<|image|>` as the image placeholder.
   */
  vision?: { imageSize: number; patchSize: number };
}

/** The smallest useful model: one layer, hidden 32; trains in milliseconds (tests, examples). */
export const TINY_MODEL: TinyModelOptions = {
  hiddenSize: 32,
  numLayers: 1,
  numHeads: 2,
  numKvHeads: 1,
  intermediateSize: 32,
  scale: 0.2,
};

export interface TinyModel {
  dir: string;
  config: ModelConfig;
  /** The weights as stored: float32 after the round trip through `dtype`. */
  weights: ModelWeights;
  /** Every file written, with its sha256. */
  files: WrittenFile[];
  tokenizer: { size: number; ids: { endOfText: number; imStart: number; imEnd: number; image?: number } };
}

const TORCH_DTYPE: Readonly<Record<FloatDtype, string>> = {
  F32: "float32",
  F16: "float16",
  BF16: "bfloat16",
};

/** Standard normal samples by Box–Muller. */
function seededNormal(seed: number): () => number {
  const uniform = seededRandom(seed);
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

function tinyConfig(
  options: TinyModelOptions,
  tokenizer: ReturnType<typeof tinyTokenizerFiles>,
): ModelConfig {
  const architecture = options.architecture ?? "llama";
  const hiddenSize = options.hiddenSize ?? 32;
  const numHeads = options.numHeads ?? 4;
  const vocabSize = options.vocabSize ?? tokenizer.size;
  if (vocabSize < tokenizer.size)
    throw new Error(`vocabSize ${vocabSize} is below the tokenizer's ${tokenizer.size}`);
  if (hiddenSize % numHeads !== 0)
    throw new Error(`hiddenSize ${hiddenSize} is not divisible by numHeads ${numHeads}`);
  return {
    architecture,
    hiddenSize,
    intermediateSize: options.intermediateSize ?? 64,
    numLayers: options.numLayers ?? 2,
    numHeads,
    numKvHeads: options.numKvHeads ?? 2,
    headDim: hiddenSize / numHeads,
    vocabSize,
    rmsNormEps: 1e-6,
    ropeTheta: 10_000,
    ropeScaling: null,
    maxPositionEmbeddings: options.maxPositionEmbeddings ?? 512,
    tieWordEmbeddings: options.tieWordEmbeddings ?? true,
    attentionBias: architecture === "qwen2" || (options.attentionBias ?? false),
    bosTokenId: tokenizer.ids.endOfText,
    eosTokenIds: [tokenizer.ids.imEnd],
    torchDtype: TORCH_DTYPE[options.dtype ?? "F32"],
    ...(options.vision && tokenizer.ids.image !== undefined
      ? { vision: { ...options.vision, numChannels: 3, imageTokenId: tokenizer.ids.image } }
      : {}),
  };
}

/** Random tensors by HF name, in the checkpoint's order (so the seed fixes every value). */
function randomTensors(config: ModelConfig, seed: number, scale: number, dtype: FloatDtype) {
  const normal = seededNormal(seed);
  const byName = new Map<string, Float32Array>();
  for (const { name, shape } of modelTensorSpecs(config)) {
    const isNorm = name.endsWith("norm.weight");
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (isNorm ? 1 : 0) + scale * normal();
    byName.set(name, roundToDtype(data, dtype));
  }
  return byName;
}

function toModelWeights(config: ModelConfig, byName: Map<string, Float32Array>): ModelWeights {
  return assembleModelWeights(config, ({ name }) => {
    const tensor = byName.get(name);
    if (!tensor) throw new Error(`tiny model is missing ${name}`);
    return tensor;
  });
}

/** Writes config.json, weights, tokenizer.json and tokenizer_config.json into `dir` (created if needed). */
export async function writeTinyModel(dir: string, options: TinyModelOptions = {}): Promise<TinyModel> {
  const dtype = options.dtype ?? "F32";
  const tokenizer = tinyTokenizerFiles(options.maxPositionEmbeddings ?? 512, options.vision !== undefined);
  const config = tinyConfig(options, tokenizer);
  const weights = toModelWeights(
    config,
    randomTensors(config, options.seed ?? 0, options.scale ?? 0.02, dtype),
  );
  await mkdir(dir, { recursive: true });
  const files = [
    await writeModelConfig(dir, config),
    ...(await writeModelWeights(dir, config, weights, { dtype, shards: options.shards ?? 1 })),
    await writeJsonFile(join(dir, "tokenizer.json"), tokenizer.tokenizerJson),
    await writeJsonFile(join(dir, "tokenizer_config.json"), tokenizer.tokenizerConfig),
  ];
  return { dir, config, weights, files, tokenizer: { size: tokenizer.size, ids: tokenizer.ids } };
}
