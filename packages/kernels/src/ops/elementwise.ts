import { loadNative } from "../loader.ts";
import { embeddingBf16, isBf16, type WeightArray } from "./gemm-bf16.ts";

/**
 * The native functions of src/cpu/elementwise_binding.cc. Most take exactly their
 * wrapper's arguments (shapes in each wrapper's comment); rope takes the
 * frequencies unpacked and the direction.
 */
export interface ElementwiseBinding {
  rmsNorm: typeof rmsNorm;
  rmsNormBackward(...args: Required<Parameters<typeof rmsNormBackward>>): void;
  rope(
    x: Float32Array,
    positions: Int32Array,
    invFreq: Float32Array,
    n: number,
    heads: number,
    headDim: number,
    attentionScaling: number,
    inverse: boolean,
  ): void;
  swiglu: typeof swiglu;
  swigluBackward: typeof swigluBackward;
  embedding(
    ids: Int32Array,
    table: Float32Array,
    out: Float32Array,
    n: number,
    vocab: number,
    d: number,
  ): void;
  embeddingBackward: typeof embeddingBackward;
  addInPlace: typeof addInPlace;
  addBias: typeof addBias;
}

// ---- RMSNorm ----------------------------------------------------------------

/**
 * RMSNorm (Llama, Qwen2): out[n, d] = x · rsqrt(mean_j x[i, j]² + eps) · weight[d].
 * When invRms [n] is given it receives rsqrt(mean(x²) + eps) per row, which
 * rmsNormBackward can reuse instead of recomputing it. eps must be > 0.
 */
export function rmsNorm(
  x: Float32Array,
  weight: Float32Array,
  out: Float32Array,
  invRms: Float32Array | null,
  n: number,
  d: number,
  eps: number,
): void {
  loadNative().rmsNorm(x, weight, out, invRms, n, d, eps);
}

/**
 * RMSNorm's backward for L = Σ dOut ⊙ rmsNorm(x):
 * - dx [n, d] is overwritten, or added to when `accumulate` (e.g. onto the
 *   residual stream's gradient);
 * - dWeight [d] is always accumulated (+=), so it sums over calls; null skips it.
 * invRms [n] from the forward, or null to recompute it from x and eps. dx must
 * not share memory with dOut or x.
 */
export function rmsNormBackward(
  dOut: Float32Array,
  x: Float32Array,
  weight: Float32Array,
  invRms: Float32Array | null,
  dx: Float32Array,
  dWeight: Float32Array | null,
  n: number,
  d: number,
  eps: number,
  accumulate = false,
): void {
  loadNative().rmsNormBackward(dOut, x, weight, invRms, dx, dWeight, n, d, eps, accumulate);
}

// ---- RoPE -------------------------------------------------------------------

/**
 * What the rope kernels need: HF's `inv_freq` and `attention_scaling` (the engine
 * computes them from a model's config, packages/engine/src/model/rope.ts).
 */
export interface RopeFrequencies {
  /** [rotaryDim / 2]: θ_k = position · invFreq[k]. */
  invFreq: Float32Array;
  /** Multiplies cos and sin (1 except for yarn and longrope). */
  attentionScaling: number;
}

/**
 * Rotary position embedding in Hugging Face's rotate_half layout, in place on
 * x [n, heads, headDim] (q or k rows; row i at position positions[i] ≥ 0):
 *   x[k]        ← x[k]·c − x[k + r]·s
 *   x[k + r]    ← x[k + r]·c + x[k]·s,   c = a·cos θ_k, s = a·sin θ_k, k < r
 * with r = invFreq.length ≤ headDim / 2 and a = attentionScaling. Dimensions from
 * 2r on pass through unchanged (partial_rotary_factor < 1). Angles are computed in
 * float64 (transformers multiplies in fp32), so large positions stay exact.
 */
export function rope(
  x: Float32Array,
  positions: Int32Array,
  freqs: RopeFrequencies,
  n: number,
  heads: number,
  headDim: number,
): void {
  loadNative().rope(x, positions, freqs.invFreq, n, heads, headDim, freqs.attentionScaling, false);
}

/**
 * The backward of `rope`: rotates the gradient by −θ with the same scaling (the
 * transpose of the forward map), in place on dx [n, heads, headDim] (the
 * arguments of `rope`, the gradient in place of x). With
 * attentionScaling 1 this is also the forward's inverse.
 */
export const ropeBackward: typeof rope = (dx, positions, freqs, n, heads, headDim) =>
  loadNative().rope(dx, positions, freqs.invFreq, n, heads, headDim, freqs.attentionScaling, true);

// ---- SwiGLU -----------------------------------------------------------------

/** The Llama MLP gate: out = silu(gate) · up elementwise, silu(g) = g · σ(g); all [n, f]. */
export function swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void {
  loadNative().swiglu(gate, up, out);
}

/**
 * SwiGLU's backward: dGate = dOut · up · σ(g)(1 + g(1 − σ(g))), dUp = dOut · silu(g),
 * both overwritten; all [n, f].
 */
export function swigluBackward(
  dOut: Float32Array,
  gate: Float32Array,
  up: Float32Array,
  dGate: Float32Array,
  dUp: Float32Array,
): void {
  loadNative().swigluBackward(dOut, gate, up, dGate, dUp);
}

// ---- Embedding --------------------------------------------------------------

/**
 * out[n, d] = table[ids[i], :] for table [vocab, d] (f32, or bf16 widened to f32);
 * every id must be in [0, vocab).
 */
export function embedding(
  ids: Int32Array,
  table: WeightArray,
  out: Float32Array,
  n: number,
  vocab: number,
  d: number,
): void {
  if (isBf16(table)) embeddingBf16(ids, table, out, n, vocab, d);
  else loadNative().embedding(ids, table, out, n, vocab, d);
}

/**
 * The embedding's backward: dTable[ids[i], :] += dOut[i, :] (accumulated). Repeated
 * ids add up without races, in row order, so the result is deterministic.
 */
export function embeddingBackward(
  ids: Int32Array,
  dOut: Float32Array,
  dTable: Float32Array,
  n: number,
  vocab: number,
  d: number,
): void {
  loadNative().embeddingBackward(ids, dOut, dTable, n, vocab, d);
}

// ---- Adds -------------------------------------------------------------------

/** target += source elementwise (the residual stream); source may be target itself, not a shifted view of it. */
export function addInPlace(target: Float32Array, source: Float32Array): void {
  loadNative().addInPlace(target, source);
}

/** y[rows, d] += bias[d] on every row (a linear layer's bias). */
export function addBias(y: Float32Array, bias: Float32Array, rows: number, d: number): void {
  loadNative().addBias(y, bias, rows, d);
}
