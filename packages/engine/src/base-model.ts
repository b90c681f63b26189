// A frozen base model shared by every policy over it: config, weights, RoPE
// frequencies and (when loaded from a directory) its tokenizer.
import type { RopeFrequencies } from "@opentinker/kernels";
import {
  type HfModel,
  type LoadModelOptions,
  loadHfModel,
  type ModelConfig,
  type ModelWeights,
  ropeFrequencies,
  type TextTokenizer,
} from "./model/index.ts";

export interface BaseModel {
  name: string;
  config: ModelConfig;
  weights: ModelWeights;
  rope: RopeFrequencies;
  tokenizer?: TextTokenizer;
  dir?: string;
}

export function baseModelFrom(
  name: string,
  model: Pick<HfModel, "config" | "weights"> & Partial<HfModel>,
): BaseModel {
  return {
    name,
    config: model.config,
    weights: model.weights,
    rope: ropeFrequencies(model.config),
    tokenizer: model.tokenizer,
    dir: model.dir,
  };
}

/**
 * Loads a local Hugging Face directory as a base model (nothing is fetched); its
 * matrices in OPENTINKER_WEIGHT_DTYPE unless `options` says otherwise.
 */
export async function loadBaseModel(
  dir: string,
  name = dir,
  options: LoadModelOptions = {},
): Promise<BaseModel> {
  return baseModelFrom(name, await loadHfModel(dir, options));
}
