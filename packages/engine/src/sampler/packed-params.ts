// The sampler's frozen f32 base matrices, packed once into the batch-invariant
// kernel's panels: a decode step then streams each weight as it is stored
// instead of repacking it on every call, which made batch 1 up to 2× slower
// than it needs to be. The packs are extra memory (one more copy of each f32
// matrix; bf16 matrices need none: their kernel reads them as stored), shared
// by every sampler over the same base in this process.
import { isBf16, type PackedWeight, packWeight, type WeightArray } from "@opentinker/kernels";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams } from "../nn/params.ts";

const packs = new WeakMap<Float32Array, PackedWeight>();

function packedOf(weight: WeightArray, dOut: number, dIn: number): PackedWeight | undefined {
  if (isBf16(weight)) return undefined;
  let packed = packs.get(weight);
  if (!packed) {
    packed = packWeight(weight, dOut, dIn);
    packs.set(weight, packed);
  }
  return packed;
}

function withPacked(p: LinearParams): LinearParams {
  if (p.weightGrad) return p; // a trainable weight changes: nothing to pack once
  const packed = packedOf(p.weight, p.dOut, p.dIn);
  return packed ? { ...p, packed } : p;
}

const LINEARS = ["q", "k", "v", "o", "gate", "up", "down"] as const;

/** The same parameters with every frozen f32 projection and the unembedding packed (the weights themselves stay). */
export function withPackedWeights(params: ModelParams): ModelParams {
  const layers = params.layers.map((layer) => {
    const out: LayerParams = { ...layer };
    for (const name of LINEARS) out[name] = withPacked(layer[name]);
    return out;
  });
  const { vocabSize, hiddenSize } = params.shape;
  const packed = params.unembed.grad ? undefined : packedOf(params.unembed.weight, vocabSize, hiddenSize);
  return { ...params, layers, unembed: packed ? { ...params.unembed, packed } : params.unembed };
}
