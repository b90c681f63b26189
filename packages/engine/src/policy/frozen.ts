import type { Backend, F32, Weight, WeightArray } from "@opentinker/kernels";
import type { BaseModel } from "../base-model.ts";
import { type ModelConfig, type ModelWeights, visionDims } from "../model/index.ts";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams, ModelShape, VisionParams } from "../nn/params.ts";

export function frozenLinear(weight: Weight, dIn: number, dOut: number, bias?: F32): LinearParams {
  return bias ? { dIn, dOut, weight, bias } : { dIn, dOut, weight };
}

export function modelShape(c: ModelConfig): ModelShape {
  return {
    hiddenSize: c.hiddenSize,
    intermediateSize: c.intermediateSize,
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    numKvHeads: c.numKvHeads,
    headDim: c.headDim,
    vocabSize: c.vocabSize,
    rmsNormEps: c.rmsNormEps,
  };
}

/** Uploads each host array once per backend: a base model's tensors are on the device once, however many policies use them. */
const uploaded = new WeakMap<Backend, WeakMap<WeightArray, Weight>>();
function onDevice<A extends WeightArray>(be: Backend, data: A, shape: number[]): Weight {
  let mine = uploaded.get(be);
  if (!mine) {
    mine = new WeakMap();
    uploaded.set(be, mine);
  }
  let buffer = mine.get(data);
  if (!buffer) {
    buffer = be.upload(data, shape);
    mine.set(data, buffer);
  }
  return buffer;
}
const f32On = (be: Backend, data: Float32Array, shape: number[]) => onDevice(be, data, shape) as F32;

/** The vision part as frozen forward-pass parameters (undefined for a text-only model). */
export function frozenVision(be: Backend, c: ModelConfig, weights: ModelWeights): VisionParams | undefined {
  if (!c.vision || !weights.vision) return undefined;
  const { numPatches, patchDim } = visionDims(c.vision);
  const w = weights.vision;
  const H = c.hiddenSize;
  return {
    numPatches,
    proj: frozenLinear(onDevice(be, w.patchProj, [H, patchDim]), patchDim, H, f32On(be, w.patchBias, [H])),
    posEmbed: { value: f32On(be, w.posEmbed, [numPatches, H]) },
  };
}

/** The base model's weights as forward-pass parameters on its backend, nothing trainable. */
export function frozenParams(base: BaseModel): ModelParams {
  const be = base.backend;
  const c = base.config;
  const H = c.hiddenSize;
  const I = c.intermediateSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const lin = (w: WeightArray, dIn: number, dOut: number, bias?: Float32Array) =>
    frozenLinear(onDevice(be, w, [dOut, dIn]), dIn, dOut, bias && f32On(be, bias, [dOut]));
  const layers: LayerParams[] = base.weights.layers.map((w) => ({
    inputNorm: { weight: f32On(be, w.inputNorm, [H]) },
    q: lin(w.qProj, H, q, w.qBias),
    k: lin(w.kProj, H, kv, w.kBias),
    v: lin(w.vProj, H, kv, w.vBias),
    o: lin(w.oProj, q, H),
    postAttentionNorm: { weight: f32On(be, w.postAttentionNorm, [H]) },
    gate: lin(w.gateProj, H, I),
    up: lin(w.upProj, H, I),
    down: lin(w.downProj, I, H),
  }));
  const params: ModelParams = {
    backend: be,
    shape: modelShape(c),
    rope: base.rope,
    embed: { table: onDevice(be, base.weights.embedTokens, [c.vocabSize, H]) },
    layers,
    finalNorm: { weight: f32On(be, base.weights.norm, [H]) },
    unembed: { weight: onDevice(be, base.weights.lmHead, [c.vocabSize, H]) },
  };
  const vision = frozenVision(be, c, base.weights);
  if (vision) params.vision = vision;
  return params;
}

/**
 * Gives back the buffers of params made by frozenParams for weights of their
 * own (a full-parameter snapshot's), once nothing uses them; a base model's
 * own params live as long as the base and are never freed this way.
 */
export function freeFrozenParams(params: ModelParams): void {
  const be = params.backend;
  const buffers = new Set<Weight>([params.embed.table, params.unembed.weight, params.finalNorm.weight]);
  for (const layer of params.layers) {
    buffers.add(layer.inputNorm.weight).add(layer.postAttentionNorm.weight);
    for (const p of [layer.q, layer.k, layer.v, layer.o, layer.gate, layer.up, layer.down]) {
      buffers.add(p.weight);
      if (p.bias) buffers.add(p.bias);
    }
  }
  const vision = params.vision;
  if (vision) {
    buffers.add(vision.proj.weight).add(vision.posEmbed.value);
    if (vision.proj.bias) buffers.add(vision.proj.bias);
  }
  for (const buffer of buffers) be.free(buffer);
}
