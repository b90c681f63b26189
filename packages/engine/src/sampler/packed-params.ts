// The sampler's frozen base matrices (f32 or bf16), packed once into the
// batch-invariant kernel's panels: a decode step then streams each weight in
// long sequential runs instead of repacking it on every call (f32: up to 2×
// slower at batch 1) or reading it in short row runs (bf16). The packs are
// extra memory, one more copy of each matrix in its dtype, shared by every
// sampler over the same base in this process.
import type { Backend, PackedWeight, Weight } from "@opentinker/kernels";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams } from "../nn/params.ts";

// Keyed by the weight's buffer: the base's buffers are made once per backend (policy/frozen.ts).
const packs = new WeakMap<Weight, PackedWeight>();

function packedOf(be: Backend, weight: Weight, dOut: number, dIn: number): PackedWeight {
  let packed = packs.get(weight);
  if (!packed) {
    packed = be.packWeight(weight, dOut, dIn);
    packs.set(weight, packed);
  }
  return packed;
}

function withPacked(be: Backend, p: LinearParams): LinearParams {
  if (p.weightGrad) return p; // a trainable weight changes: nothing to pack once
  return { ...p, packed: packedOf(be, p.weight, p.dOut, p.dIn) };
}

const LINEARS = ["q", "k", "v", "o", "gate", "up", "down"] as const;

/** The same parameters with every frozen projection and the unembedding packed (the weights themselves stay). */
export function withPackedWeights(params: ModelParams): ModelParams {
  const layers = params.layers.map((layer) => {
    const out: LayerParams = { ...layer };
    for (const name of LINEARS) out[name] = withPacked(params.backend, layer[name]);
    return out;
  });
  const { vocabSize, hiddenSize } = params.shape;
  const packed = params.unembed.grad
    ? undefined
    : packedOf(params.backend, params.unembed.weight, vocabSize, hiddenSize);
  return { ...params, layers, unembed: packed ? { ...params.unembed, packed } : params.unembed };
}
