// What the service records about a base model when it is registered (one place,
// for `npm start`, tests and benches): read from the model directory's config.
import { loadModelConfig, type ModelConfig, visionDims } from "./config.ts";
import { modelTensorSpecs } from "./weights.ts";

export interface BaseModelDescription {
  name: string;
  path: string;
  architecture: string;
  vocabSize: number;
  contextLength: number;
  visionLanguage: boolean;
  /** Positions one image takes (vision-language models), else null. */
  imageTokens: number | null;
  /** LoRA parameters per unit of rank: Σ over layers and modules of (d_in + d_out) (lora-policy.ts's modules). */
  attnParamsPerRank: number;
  mlpParamsPerRank: number;
  unembedParamsPerRank: number;
  /** Every parameter of the model (a full-parameter adapter trains them all). */
  parameters: number;
}

/** What placement needs to know of an adapter's size over this model. */
export function trainableSizes(c: ModelConfig) {
  const H = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  return {
    attnParamsPerRank: c.numLayers * (H + q + 2 * (H + kv) + (q + H)),
    mlpParamsPerRank: c.numLayers * (2 * (H + I) + (I + H)),
    unembedParamsPerRank: H + c.vocabSize,
    parameters: modelTensorSpecs(c).reduce((sum, spec) => sum + spec.shape.reduce((a, b) => a * b, 1), 0),
  };
}

export async function describeBaseModel(name: string, dir: string): Promise<BaseModelDescription> {
  const config = await loadModelConfig(dir);
  return {
    name,
    path: dir,
    architecture: config.architecture,
    vocabSize: config.vocabSize,
    contextLength: config.maxPositionEmbeddings,
    visionLanguage: config.vision !== undefined,
    imageTokens: config.vision ? visionDims(config.vision).numPatches : null,
    ...trainableSizes(config),
  };
}
