// The weights a forward pass uses: the frozen base model's, overlaid with a
// policy's trainable tensors (full-parameter) or LoRA adapters. Grad buffers are
// present exactly where something trains. Every tensor is a buffer of the
// params' backend (issue 45): only the backend's ops read or write them.
import type { Backend, F32, PackedWeight, RopeFrequencies, Weight } from "@opentinker/kernels";
import type { ModelConfig } from "../model/config.ts";
import type { LinearParams, LoraBindingForLayer } from "./linear.ts";

export interface NormParams {
  weight: F32; // [d]
  grad?: F32; // [d]
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
  posEmbed: { value: F32; grad?: F32 }; // [numPatches, hidden]
}

export interface ModelParams {
  /** Where every tensor below lives and what runs the model's ops. */
  backend: Backend;
  shape: ModelShape;
  rope: RopeFrequencies;
  embed: { table: Weight; grad?: F32 }; // [vocab, hidden]
  layers: LayerParams[];
  finalNorm: NormParams;
  /** [vocab, hidden]: lm_head, or the embedding table when tied (then grads are shared too). */
  unembed: { weight: Weight; packed?: PackedWeight; grad?: F32; lora?: LoraBindingForLayer };
  /** Present for a vision-language model. */
  vision?: VisionParams;
}
