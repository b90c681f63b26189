// Slow, obvious float64 versions of the optimizer ops, for tests.
import { at, type Vec } from "./vec.ts";

export interface RefAdamWParams {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number; // 1-based
  gradScale: number;
}

/** One AdamW step written as PyTorch documents it; returns the new p, m and v. */
export function refAdamwStep(
  param: Vec,
  grad: Vec,
  m: Vec,
  v: Vec,
  h: RefAdamWParams,
): { param: Float64Array; m: Float64Array; v: Float64Array } {
  const count = param.length;
  const out = { param: new Float64Array(count), m: new Float64Array(count), v: new Float64Array(count) };
  for (let i = 0; i < count; i++) {
    const g = h.gradScale * at(grad, i);
    const decayed = at(param, i) * (1 - h.lr * h.weightDecay);
    const mi = h.beta1 * at(m, i) + (1 - h.beta1) * g;
    const vi = h.beta2 * at(v, i) + (1 - h.beta2) * g * g;
    const mHat = mi / (1 - h.beta1 ** h.step);
    const vHat = vi / (1 - h.beta2 ** h.step);
    out.param[i] = decayed - (h.lr * mHat) / (Math.sqrt(vHat) + h.eps);
    out.m[i] = mi;
    out.v[i] = vi;
  }
  return out;
}

/** Σ x² over all buffers. */
export function refSumOfSquares(buffers: Vec[]): number {
  let sum = 0;
  for (const buffer of buffers) {
    for (let i = 0; i < buffer.length; i++) sum += at(buffer, i) ** 2;
  }
  return sum;
}
