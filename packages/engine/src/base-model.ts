// A frozen base model shared by every policy over it: config, weights, RoPE
// frequencies and (when loaded from a directory) its tokenizer.
import { type RopeFrequencies, ropeInvFreq } from "@opentinker/kernels";
import {
  type HfModel,
  loadHfModel,
  type ModelConfig,
  type ModelWeights,
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

export function ropeFor(config: ModelConfig): RopeFrequencies {
  return ropeInvFreq({
    hidden_size: config.hiddenSize,
    num_attention_heads: config.numHeads,
    head_dim: config.headDim,
    max_position_embeddings: config.maxPositionEmbeddings,
    rope_theta: config.ropeTheta,
    rope_scaling: config.ropeScaling as Parameters<typeof ropeInvFreq>[0]["rope_scaling"],
  });
}

export function baseModelFrom(
  name: string,
  model: Pick<HfModel, "config" | "weights"> & Partial<HfModel>,
): BaseModel {
  return {
    name,
    config: model.config,
    weights: model.weights,
    rope: ropeFor(model.config),
    tokenizer: model.tokenizer,
    dir: model.dir,
  };
}

/** Loads a local Hugging Face directory as a base model (nothing is fetched). */
export async function loadBaseModel(dir: string, name = dir): Promise<BaseModel> {
  return baseModelFrom(name, await loadHfModel(dir));
}
