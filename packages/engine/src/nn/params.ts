// The weights a forward pass uses: the frozen base model's, overlaid with a
// policy's trainable tensors (full-parameter) or LoRA adapters. Grad buffers are
// present exactly where something trains.
import type { PackedWeight, RopeFrequencies, WeightArray } from "@opentinker/kernels";
import type { ModelConfig } from "../model/config.ts";
import type { LinearParams, LoraBindingForLayer } from "./linear.ts";

export interface NormParams {
  weight: Float32Array; // [d]
  grad?: Float32Array; // [d]
}

export interface LayerParams {
  inputNorm: NormParams;
  q: LinearParams;
  k: LinearParams;
  v: LinearParams;
  o: LinearParams;
  postAttentionNorm: NormParams;
  gate: LinearParams;
  up: LinearParams;
  down: LinearParams;
}

/** What the layers read of a model's config: its sizes. */
export type ModelShape = Pick<
  ModelConfig,
  | "hiddenSize"
  | "intermediateSize"
  | "numLayers"
  | "numHeads"
  | "numKvHeads"
  | "headDim"
  | "vocabSize"
  | "rmsNormEps"
>;

/**
 * The vision part of a vision-language model: soft token i of an image is
 * proj(patch_i) + posEmbed[i]. Grads are present when it trains (full-parameter).
 */
export interface VisionParams {
  numPatches: number;
  proj: LinearParams; // dIn = C·P·P, dOut = hidden
  posEmbed: { value: Float32Array; grad?: Float32Array }; // [numPatches, hidden]
}

export interface ModelParams {
  shape: ModelShape;
  rope: RopeFrequencies;
  embed: { table: WeightArray; grad?: Float32Array }; // [vocab, hidden]
  layers: LayerParams[];
  finalNorm: NormParams;
  /** [vocab, hidden]: lm_head, or the embedding table when tied (then grads are shared too). */
  unembed: { weight: WeightArray; packed?: PackedWeight; grad?: Float32Array; lora?: LoraBindingForLayer };
  /** Present for a vision-language model. */
  vision?: VisionParams;
}
