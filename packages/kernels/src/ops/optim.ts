import { loadNative } from "../loader.ts";

/** The native functions of src/cpu/optim_binding.cc: their wrappers' arguments, every one given. */
export interface OptimBinding {
  adamwStep(...args: Required<Parameters<typeof adamwStep>>): void;
  sumOfSquares: typeof sumOfSquares;
}

/**
 * One AdamW step, in place on param, m and v (all of param's length), with
 * PyTorch's decoupled weight decay (torch.optim.AdamW, which Tinker's optim_step
 * follows):
 *   g  = gradScale · grad                      (gradScale ≤ 1 clips by global norm)
 *   p ← p · (1 − lr · weightDecay)
 *   m ← beta1 · m + (1 − beta1) · g,   v ← beta2 · v + (1 − beta2) · g²
 *   p ← p − lr · m̂ / (√v̂ + eps),       m̂ = m / (1 − beta1^step), v̂ = v / (1 − beta2^step)
 * i.e. p ← p − lr · (m̂ / (√v̂ + eps) + weightDecay · p) with the old p.
 * step is 1-based (the number of this update). Every hyperparameter must be
 * finite: lr, eps, weightDecay, gradScale ≥ 0, 0 ≤ beta1, beta2 < 1, step ≥ 1 an
 * integer; otherwise a RangeError naming it, and nothing changes.
 */
export function adamwStep(
  param: Float32Array,
  grad: Float32Array,
  m: Float32Array,
  v: Float32Array,
  lr: number,
  beta1: number,
  beta2: number,
  eps: number,
  weightDecay: number,
  step: number,
  gradScale = 1,
): void {
  loadNative().adamwStep(param, grad, m, v, lr, beta1, beta2, eps, weightDecay, step, gradScale);
}

/**
 * Σ x² over every element of every buffer, accumulated in float64 (the same
 * value for any thread count): one global norm over all parameters' gradients.
 */
export function sumOfSquares(buffers: Float32Array[]): number {
  return loadNative().sumOfSquares(buffers);
}

/** The global L2 norm √(Σ x²) over all buffers. */
export function gradNorm(buffers: Float32Array[]): number {
  return Math.sqrt(sumOfSquares(buffers));
}
