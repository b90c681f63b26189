// The Llama / Qwen2 checkpoint layout: Hugging Face tensor names and shapes
// (read from disk by weights-read.ts). Matrices keep HF's [out, in] row-major
// layout, so `y = x Wᵀ` (a Linear layer) reads them as stored. The matrices
// (projections, embedding, lm_head) are held in the weight dtype (f32 or bf16,
// see weight-dtype.ts); norms, biases and the vision part stay f32.
import type { WeightArray, WeightDtype } from "@opentinker/kernels";
import { type ModelConfig, visionDims } from "./config.ts";
import { bf16ToFloats } from "./float-convert.ts";
import { weightAs } from "./weight-dtype.ts";

export const SINGLE_FILE = "model.safetensors";
export const INDEX_FILE = "model.safetensors.index.json";

export interface LayerWeights {
  qProj: WeightArray; // [numHeads * headDim, hiddenSize]
  qBias?: Float32Array; // [numHeads * headDim]
  kProj: WeightArray; // [numKvHeads * headDim, hiddenSize]
  kBias?: Float32Array; // [numKvHeads * headDim]
  vProj: WeightArray; // [numKvHeads * headDim, hiddenSize]
  vBias?: Float32Array; // [numKvHeads * headDim]
  oProj: WeightArray; // [hiddenSize, numHeads * headDim]
  gateProj: WeightArray; // [intermediateSize, hiddenSize]
  upProj: WeightArray; // [intermediateSize, hiddenSize]
  downProj: WeightArray; // [hiddenSize, intermediateSize]
  inputNorm: Float32Array; // [hiddenSize]
  postAttentionNorm: Float32Array; // [hiddenSize]
}

/**
 * The vision part of a vision-language model: soft token i of an image is
 * patchProj · patch_i + patchBias + posEmbed[i] (see nn/vision.ts for the patch layout).
 */
export interface VisionWeights {
  patchProj: Float32Array; // [hiddenSize, numChannels · patchSize²]
  patchBias: Float32Array; // [hiddenSize]
  posEmbed: Float32Array; // [numPatches, hiddenSize]
}

export interface ModelWeights {
  embedTokens: WeightArray; // [vocabSize, hiddenSize]
  layers: LayerWeights[];
  norm: Float32Array; // [hiddenSize]
  /** [vocabSize, hiddenSize]; the same array as embedTokens when the config ties them. */
  lmHead: WeightArray;
  /** Present exactly when the config has a vision part. */
  vision?: VisionWeights;
}

type LayerKey = keyof LayerWeights;

interface LayerTensorSpec {
  key: LayerKey;
  suffix: string;
  shape: (config: ModelConfig) => number[];
  biasOnly?: boolean;
  /** A matrix: held in the weight dtype (the rest stays f32). */
  matrix?: boolean;
}

const qRows = (c: ModelConfig) => c.numHeads * c.headDim;
const kvRows = (c: ModelConfig) => c.numKvHeads * c.headDim;

/** One row per tensor of a decoder layer, in the order HF lists them. */
const LAYER_TENSORS: readonly LayerTensorSpec[] = [
  { key: "qProj", suffix: "self_attn.q_proj.weight", matrix: true, shape: (c) => [qRows(c), c.hiddenSize] },
  { key: "qBias", suffix: "self_attn.q_proj.bias", shape: (c) => [qRows(c)], biasOnly: true },
  { key: "kProj", suffix: "self_attn.k_proj.weight", matrix: true, shape: (c) => [kvRows(c), c.hiddenSize] },
  { key: "kBias", suffix: "self_attn.k_proj.bias", shape: (c) => [kvRows(c)], biasOnly: true },
  { key: "vProj", suffix: "self_attn.v_proj.weight", matrix: true, shape: (c) => [kvRows(c), c.hiddenSize] },
  { key: "vBias", suffix: "self_attn.v_proj.bias", shape: (c) => [kvRows(c)], biasOnly: true },
  { key: "oProj", suffix: "self_attn.o_proj.weight", matrix: true, shape: (c) => [c.hiddenSize, qRows(c)] },
  {
    key: "gateProj",
    suffix: "mlp.gate_proj.weight",
    matrix: true,
    shape: (c) => [c.intermediateSize, c.hiddenSize],
  },
  {
    key: "upProj",
    suffix: "mlp.up_proj.weight",
    matrix: true,
    shape: (c) => [c.intermediateSize, c.hiddenSize],
  },
  {
    key: "downProj",
    suffix: "mlp.down_proj.weight",
    matrix: true,
    shape: (c) => [c.hiddenSize, c.intermediateSize],
  },
  { key: "inputNorm", suffix: "input_layernorm.weight", shape: (c) => [c.hiddenSize] },
  { key: "postAttentionNorm", suffix: "post_attention_layernorm.weight", shape: (c) => [c.hiddenSize] },
];

export const EMBED_TOKENS = "model.embed_tokens.weight";
export const FINAL_NORM = "model.norm.weight";
export const LM_HEAD = "lm_head.weight";
export const VISION_PATCH_PROJ = "visual.patch_proj.weight";
export const VISION_PATCH_BIAS = "visual.patch_proj.bias";
export const VISION_POS_EMBED = "visual.pos_embed";

export function layerTensorName(layer: number, suffix: string): string {
  return `model.layers.${layer}.${suffix}`;
}

function layerSpecs(config: ModelConfig): readonly LayerTensorSpec[] {
  return config.attentionBias ? LAYER_TENSORS : LAYER_TENSORS.filter((spec) => !spec.biasOnly);
}

export interface TensorSpec {
  name: string;
  shape: number[];
}

/** The vision tensors of a vision-language config (none for a text-only one). */
export function visionTensorSpecs(config: ModelConfig): TensorSpec[] {
  if (!config.vision) return [];
  const { numPatches, patchDim } = visionDims(config.vision);
  const H = config.hiddenSize;
  return [
    { name: VISION_PATCH_PROJ, shape: [H, patchDim] },
    { name: VISION_PATCH_BIAS, shape: [H] },
    { name: VISION_POS_EMBED, shape: [numPatches, H] },
  ];
}

/** Every tensor a checkpoint of this config holds, with its shape; no lm_head when tied. */
export function modelTensorSpecs(config: ModelConfig): TensorSpec[] {
  const specs: TensorSpec[] = [{ name: EMBED_TOKENS, shape: [config.vocabSize, config.hiddenSize] }];
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const spec of layerSpecs(config)) {
      specs.push({ name: layerTensorName(layer, spec.suffix), shape: spec.shape(config) });
    }
  }
  specs.push({ name: FINAL_NORM, shape: [config.hiddenSize] });
  if (!config.tieWordEmbeddings) specs.push({ name: LM_HEAD, shape: [config.vocabSize, config.hiddenSize] });
  specs.push(...visionTensorSpecs(config));
  return specs;
}

/** Where each tensor lives: file name (relative to the model dir) → tensor names. */
const SPEC_BY_KEY = new Map(LAYER_TENSORS.map((spec) => [spec.key, spec]));

/** A tensor that is never held in bf16 (norms, biases, vision). */
function float32(spec: TensorSpec, data: WeightArray): Float32Array {
  if (!(data instanceof Float32Array)) throw new Error(`tensor "${spec.name}" must be float32`);
  return data;
}

function assembleLayer(
  config: ModelConfig,
  layer: number,
  take: (spec: TensorSpec) => WeightArray,
): LayerWeights {
  const spec = (key: LayerKey): TensorSpec => {
    const s = SPEC_BY_KEY.get(key);
    if (!s) throw new Error(`no tensor spec for ${key}`);
    return { name: layerTensorName(layer, s.suffix), shape: s.shape(config) };
  };
  const matrix = (key: LayerKey) => take(spec(key));
  const get = (key: LayerKey) => float32(spec(key), take(spec(key)));
  const weights: LayerWeights = {
    qProj: matrix("qProj"),
    kProj: matrix("kProj"),
    vProj: matrix("vProj"),
    oProj: matrix("oProj"),
    gateProj: matrix("gateProj"),
    upProj: matrix("upProj"),
    downProj: matrix("downProj"),
    inputNorm: get("inputNorm"),
    postAttentionNorm: get("postAttentionNorm"),
  };
  if (config.attentionBias) {
    weights.qBias = get("qBias");
    weights.kBias = get("kBias");
    weights.vBias = get("vBias");
  }
  return weights;
}

/**
 * Arranges tensors into ModelWeights. `take` returns the tensor with that HF name
 * and shape (and throws when it cannot): f32, or bf16 for a matrix; a tied lm_head
 * is the embedding array.
 */
export function assembleModelWeights(
  config: ModelConfig,
  take: (spec: TensorSpec) => WeightArray,
): ModelWeights {
  const embedTokens = take({ name: EMBED_TOKENS, shape: [config.vocabSize, config.hiddenSize] });
  const layers = Array.from({ length: config.numLayers }, (_, layer) => assembleLayer(config, layer, take));
  const normSpec = { name: FINAL_NORM, shape: [config.hiddenSize] };
  const norm = float32(normSpec, take(normSpec));
  const lmHead = config.tieWordEmbeddings
    ? embedTokens
    : take({ name: LM_HEAD, shape: [config.vocabSize, config.hiddenSize] });
  const weights: ModelWeights = { embedTokens, layers, norm, lmHead };
  const [proj, bias, pos] = visionTensorSpecs(config);
  if (proj && bias && pos)
    weights.vision = {
      patchProj: float32(proj, take(proj)),
      patchBias: float32(bias, take(bias)),
      posEmbed: float32(pos, take(pos)),
    };
  return weights;
}

/** The HF names of the tensors held in the weight dtype: projections, embedding, lm_head. */
export function matrixTensorNames(config: ModelConfig): Set<string> {
  const names = new Set([EMBED_TOKENS, LM_HEAD]);
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const spec of LAYER_TENSORS) if (spec.matrix) names.add(layerTensorName(layer, spec.suffix));
  }
  return names;
}

/** The same weights with every matrix in `dtype` (norms, biases, vision untouched; a tie stays a tie). */
export function convertModelWeights(
  config: ModelConfig,
  weights: ModelWeights,
  dtype: WeightDtype,
): ModelWeights {
  const embedTokens = weightAs(weights.embedTokens, dtype);
  const layers = weights.layers.map((l) => ({
    ...l,
    qProj: weightAs(l.qProj, dtype),
    kProj: weightAs(l.kProj, dtype),
    vProj: weightAs(l.vProj, dtype),
    oProj: weightAs(l.oProj, dtype),
    gateProj: weightAs(l.gateProj, dtype),
    upProj: weightAs(l.upProj, dtype),
    downProj: weightAs(l.downProj, dtype),
  }));
  const lmHead = config.tieWordEmbeddings ? embedTokens : weightAs(weights.lmHead, dtype);
  return { ...weights, embedTokens, layers, lmHead };
}

function layerTensor(weights: ModelWeights, layer: number, key: LayerKey): WeightArray {
  const tensor = weights.layers[layer]?.[key];
  if (!tensor) throw new Error(`weights.layers[${layer}].${key} is missing`);
  return tensor;
}

/** Looks a tensor up by its HF name; the inverse of the naming above. */
function tensorByName(config: ModelConfig, weights: ModelWeights): Map<string, WeightArray> {
  const byName = new Map<string, WeightArray>([
    [EMBED_TOKENS, weights.embedTokens],
    [FINAL_NORM, weights.norm],
    [LM_HEAD, weights.lmHead],
  ]);
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const spec of layerSpecs(config)) {
      byName.set(layerTensorName(layer, spec.suffix), layerTensor(weights, layer, spec.key));
    }
  }
  if (weights.vision) {
    byName.set(VISION_PATCH_PROJ, weights.vision.patchProj);
    byName.set(VISION_PATCH_BIAS, weights.vision.patchBias);
    byName.set(VISION_POS_EMBED, weights.vision.posEmbed);
  }
  return byName;
}

/**
 * The HF name → tensor map of a model, ready for writeSafetensors. Lengths are
 * checked against the config; a tied lm_head is left out, as transformers saves it.
 * A bf16 matrix is widened and marked BF16, so it is written back bit for bit.
 */
export function modelWeightTensors(
  config: ModelConfig,
  weights: ModelWeights,
): Map<string, { shape: number[]; data: Float32Array; dtype?: "BF16" }> {
  const byName = tensorByName(config, weights);
  const out = new Map<string, { shape: number[]; data: Float32Array; dtype?: "BF16" }>();
  for (const spec of modelTensorSpecs(config)) {
    const data = byName.get(spec.name);
    const expected = spec.shape.reduce((a, b) => a * b, 1);
    if (!data || data.length !== expected) {
      throw new Error(
        `${spec.name}: expected ${expected} values [${spec.shape.join(", ")}], got ${data?.length ?? 0}`,
      );
    }
    out.set(
      spec.name,
      data instanceof Float32Array
        ? { shape: spec.shape, data }
        : { shape: spec.shape, data: bf16ToFloats(data), dtype: "BF16" },
    );
  }
  return out;
}
