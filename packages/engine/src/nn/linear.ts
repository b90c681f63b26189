// A linear layer y = x·Wᵀ + b (+ a LoRA delta), its backward, and the shapes
// every projection of the model shares. Frozen weights have no grad buffers.
import {
  addBias,
  type LoraTable,
  linear,
  linearBackwardInput,
  linearBackwardWeight,
  loraBackward,
  loraForward,
  type PackedWeight,
  sumRowsInto,
  type WeightArray,
} from "@opentinker/kernels";

export interface LoraBindingForLayer {
  table: LoraTable; // the adapter's A [r, dIn], B [dOut, r]
  grads: LoraTable; // dA, dB buffers with the same ranks (accumulated)
}

export interface LinearParams {
  dIn: number;
  dOut: number;
  /** Frozen: f32 or bf16; trainable (full-parameter): always f32. */
  weight: WeightArray; // [dOut, dIn]
  /** The frozen weight (f32 or bf16) packed once for the sampler's batch-invariant product (sampler/packed-params.ts). */
  packed?: PackedWeight;
  bias?: Float32Array; // [dOut]
  /** Present when the weight trains (full-parameter). */
  weightGrad?: Float32Array; // [dOut, dIn]
  biasGrad?: Float32Array; // [dOut]
  lora?: LoraBindingForLayer;
}

// Every row of a single-policy batch uses adapter slot 0.
let zeroSlots = new Int32Array(0);
function slotsFor(rows: number): Int32Array {
  if (zeroSlots.length < rows) zeroSlots = new Int32Array(rows);
  return zeroSlots.subarray(0, rows);
}

/** y[rows, dOut] = x[rows, dIn] · Wᵀ + b + LoRA(x). */
export function linearForward(p: LinearParams, x: Float32Array, rows: number, y: Float32Array): void {
  linear(x, p.weight, y, rows, p.dIn, p.dOut);
  if (p.bias) addBias(y, p.bias, rows, p.dOut);
  if (p.lora) loraForward(x, rows, slotsFor(rows), p.lora.table, y);
}

/**
 * Given dy = dL/dy: dx (+)= dy · W + LoRA part (when dx is given), and every
 * trainable part's gradient accumulated (W, b, or the adapter's A and B).
 */
export function linearBackward(
  p: LinearParams,
  x: Float32Array,
  dy: Float32Array,
  rows: number,
  dx: Float32Array | null,
  accumulateDx: boolean,
): void {
  if (dx) linearBackwardInput(dy, p.weight, dx, rows, p.dIn, p.dOut, accumulateDx);
  if (p.weightGrad) linearBackwardWeight(dy, x, p.weightGrad, rows, p.dIn, p.dOut);
  if (p.biasGrad) sumRowsInto(dy, rows, p.dOut, p.biasGrad);
  if (p.lora) loraBackward(x, dy, rows, slotsFor(rows), p.lora.table, dx, p.lora.grads);
}
