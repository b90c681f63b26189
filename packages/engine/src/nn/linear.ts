// A linear layer y = x·Wᵀ + b (+ a LoRA delta), its backward, and the shapes
// every projection of the model shares. Frozen weights have no grad buffers.
import type { Backend, F32, I32, LoraTable, PackedWeight, Weight } from "@opentinker/kernels";

export interface LoraBindingForLayer {
  table: LoraTable; // the adapter's A [r, dIn], B [dOut, r]
  grads: LoraTable; // dA, dB buffers with the same ranks (accumulated)
}

export interface LinearParams {
  dIn: number;
  dOut: number;
  /** Frozen: f32 or bf16; trainable (full-parameter): always f32. */
  weight: Weight; // [dOut, dIn]
  /** The frozen weight (f32 or bf16) packed once for the sampler's batch-invariant product (sampler/packed-params.ts). */
  packed?: PackedWeight;
  bias?: F32; // [dOut]
  /** Present when the weight trains (full-parameter). */
  weightGrad?: F32; // [dOut, dIn]
  biasGrad?: F32; // [dOut]
  lora?: LoraBindingForLayer;
}

// Every row of a single-policy batch uses adapter slot 0: one zero buffer per backend, grown as needed.
const zeroSlots = new WeakMap<Backend, I32>();
export function slotsFor(be: Backend, rows: number): I32 {
  let slots = zeroSlots.get(be);
  if (!slots || slots.length < rows) {
    slots = be.alloc("i32", [Math.max(rows, 2 * (slots?.length ?? 0))]);
    zeroSlots.set(be, slots);
  }
  return slots.length === rows ? slots : be.view(slots, 0, [rows]);
}

/** y[rows, dOut] = x[rows, dIn] · Wᵀ + b + LoRA(x). */
export function linearForward(be: Backend, p: LinearParams, x: F32, rows: number, y: F32): void {
  be.linear(x, p.weight, y, rows, p.dIn, p.dOut);
  if (p.bias) be.addBias(y, p.bias, rows, p.dOut);
  if (p.lora) be.loraForward(x, rows, slotsFor(be, rows), p.lora.table, y);
}

/**
 * Given dy = dL/dy: dx (+)= dy · W + LoRA part (when dx is given), and every
 * trainable part's gradient accumulated (W, b, or the adapter's A and B).
 */
export function linearBackward(
  be: Backend,
  p: LinearParams,
  x: F32,
  dy: F32,
  rows: number,
  dx: F32 | null,
  accumulateDx: boolean,
): void {
  if (dx) be.linearBackwardInput(dy, p.weight, dx, rows, p.dIn, p.dOut, accumulateDx);
  if (p.weightGrad) be.linearBackwardWeight(dy, x, p.weightGrad, rows, p.dIn, p.dOut);
  if (p.biasGrad) be.sumRows(dy, rows, p.dOut, p.biasGrad);
  if (p.lora) be.loraBackward(x, dy, rows, slotsFor(be, rows), p.lora.table, dx, p.lora.grads);
}
