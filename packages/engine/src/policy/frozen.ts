import type { WeightArray } from "@opentinker/kernels";
import type { BaseModel } from "../base-model.ts";
import { type ModelConfig, type ModelWeights, visionDims } from "../model/index.ts";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams, ModelShape, VisionParams } from "../nn/params.ts";

export function frozenLinear(
  weight: WeightArray,
  dIn: number,
  dOut: number,
  bias?: Float32Array,
): LinearParams {
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

/** The vision part as frozen forward-pass parameters (undefined for a text-only model). */
export function frozenVision(c: ModelConfig, weights: ModelWeights): VisionParams | undefined {
  if (!c.vision || !weights.vision) return undefined;
  const { numPatches, patchDim } = visionDims(c.vision);
  const w = weights.vision;
  return {
    numPatches,
    proj: frozenLinear(w.patchProj, patchDim, c.hiddenSize, w.patchBias),
    posEmbed: { value: w.posEmbed },
  };
}

/** The base model's weights as forward-pass parameters, nothing trainable. */
export function frozenParams(base: BaseModel): ModelParams {
  const c = base.config;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const layers: LayerParams[] = base.weights.layers.map((w) => ({
    inputNorm: { weight: w.inputNorm },
    q: frozenLinear(w.qProj, c.hiddenSize, q, w.qBias),
    k: frozenLinear(w.kProj, c.hiddenSize, kv, w.kBias),
    v: frozenLinear(w.vProj, c.hiddenSize, kv, w.vBias),
    o: frozenLinear(w.oProj, q, c.hiddenSize),
    postAttentionNorm: { weight: w.postAttentionNorm },
    gate: frozenLinear(w.gateProj, c.hiddenSize, c.intermediateSize),
    up: frozenLinear(w.upProj, c.hiddenSize, c.intermediateSize),
    down: frozenLinear(w.downProj, c.intermediateSize, c.hiddenSize),
  }));
  const params: ModelParams = {
    shape: modelShape(c),
    rope: base.rope,
    embed: { table: base.weights.embedTokens },
    layers,
    finalNorm: { weight: base.weights.norm },
    unembed: { weight: base.weights.lmHead },
  };
  const vision = frozenVision(c, base.weights);
  if (vision) params.vision = vision;
  return params;
}
