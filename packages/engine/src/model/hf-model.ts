// A model directory as Hugging Face lays it out: config.json, *.safetensors,
// tokenizer.json and tokenizer_config.json. Nothing is fetched: `dir` is local.
import { resolve } from "node:path";
import { loadTokenizer, type TextTokenizer } from "@opentinker/tokenizer";
import { loadModelConfig, type ModelConfig } from "./config.ts";
import type { WeightDtypeChoice } from "./weight-dtype.ts";
import type { ModelWeights } from "./weights.ts";
import { loadModelWeights } from "./weights-read.ts";

export interface HfModel {
  /** Absolute path of the model directory. */
  dir: string;
  config: ModelConfig;
  weights: ModelWeights;
  tokenizer: TextTokenizer;
}

export interface LoadModelOptions {
  /** The dtype of the base matrices (default: OPENTINKER_WEIGHT_DTYPE, see weight-dtype.ts). */
  weightDtype?: WeightDtypeChoice;
}

/** Loads config, tokenizer and weights from a local model directory. */
export async function loadHfModel(dir: string, options: LoadModelOptions = {}): Promise<HfModel> {
  const absolute = resolve(dir);
  const config = await loadModelConfig(absolute);
  // The tokenizer is checked before the weights: a mismatch should not cost a multi-GB read.
  const tokenizer = await loadTokenizer(absolute);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new Error(
      `${absolute}: tokenizer has ${tokenizer.vocabSize} tokens but config.json vocab_size is ${config.vocabSize}`,
    );
  }
  const weights = await loadModelWeights(absolute, config, options.weightDtype);
  return { dir: absolute, config, weights, tokenizer };
}
