// Slow, obvious float64 versions of the elementwise ops, for tests.
import { at, type Vec } from "./vec.ts";

/** rsqrt(mean(x[i, :]²) + eps) of row i of x [n, d]. */
function rowInvRms(x: Vec, i: number, d: number, eps: number): number {
  let sumSquares = 0;
  for (let k = 0; k < d; k++) sumSquares += at(x, i * d + k) ** 2;
  return 1 / Math.sqrt(sumSquares / d + eps);
}

/** out = x · rsqrt(mean(x²) + eps) · w per row, and the per-row rsqrt. */
export function refRmsNorm(
  x: Vec,
  weight: Vec,
  n: number,
  d: number,
  eps: number,
): { out: Float64Array; invRms: Float64Array } {
  const out = new Float64Array(n * d);
  const invRms = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = rowInvRms(x, i, d, eps);
    invRms[i] = r;
    for (let k = 0; k < d; k++) out[i * d + k] = at(x, i * d + k) * r * at(weight, k);
  }
  return { out, invRms };
}

/** Gradients of L = Σ dOut ⊙ rmsNorm(x) with respect to x and the weight. */
export function refRmsNormBackward(
  dOut: Vec,
  x: Vec,
  weight: Vec,
  n: number,
  d: number,
  eps: number,
): { dx: Float64Array; dWeight: Float64Array } {
  const dx = new Float64Array(n * d);
  const dWeight = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    const r = rowInvRms(x, i, d, eps);
    // y_k = x_k · r · w_k;  ∂r/∂x_j = −r³ · x_j / d
    let gwx = 0;
    for (let k = 0; k < d; k++) gwx += at(dOut, i * d + k) * at(weight, k) * at(x, i * d + k);
    for (let j = 0; j < d; j++) {
      dx[i * d + j] = at(dOut, i * d + j) * at(weight, j) * r - ((r ** 3 * at(x, i * d + j)) / d) * gwx;
      dWeight[j] = at(dWeight, j) + at(dOut, i * d + j) * at(x, i * d + j) * r;
    }
  }
  return { dx, dWeight };
}

/**
 * HF rotate_half RoPE on x [n, heads, headDim] (copied, not in place): pairs
 * (k, k + r) for k < r = invFreq.length turn by ±θ = pos · invFreq[k], cos and
 * sin scaled by `scale`; the rest passes through.
 */
export function refRope(
  x: Vec,
  positions: Vec,
  invFreq: Vec,
  n: number,
  heads: number,
  headDim: number,
  scale: number,
  inverse: boolean,
): Float64Array {
  const out = Float64Array.from(x);
  const r = invFreq.length;
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < heads; h++) {
      const base = (i * heads + h) * headDim;
      for (let k = 0; k < r; k++) {
        const angle = at(positions, i) * at(invFreq, k);
        const c = scale * Math.cos(angle);
        const s = (inverse ? -1 : 1) * scale * Math.sin(angle);
        const a = at(x, base + k);
        const b = at(x, base + k + r);
        out[base + k] = a * c - b * s;
        out[base + k + r] = b * c + a * s;
      }
    }
  }
  return out;
}

const sigmoid = (g: number) => 1 / (1 + Math.exp(-g));

/** silu(gate) · up. */
export function refSwiglu(gate: Vec, up: Vec): Float64Array {
  return Float64Array.from({ length: gate.length }, (_, i) => at(gate, i) * sigmoid(at(gate, i)) * at(up, i));
}

/** Gradients of L = Σ dOut ⊙ swiglu(gate, up). */
export function refSwigluBackward(dOut: Vec, gate: Vec, up: Vec): { dGate: Float64Array; dUp: Float64Array } {
  const dGate = new Float64Array(gate.length);
  const dUp = new Float64Array(gate.length);
  for (let i = 0; i < gate.length; i++) {
    const g = at(gate, i);
    const s = sigmoid(g);
    dUp[i] = at(dOut, i) * g * s;
    dGate[i] = at(dOut, i) * at(up, i) * (s + g * s * (1 - s));
  }
  return { dGate, dUp };
}

/** table[ids[i], :] for each i. */
export function refEmbedding(ids: Vec, table: Vec, d: number): Float64Array {
  const out = new Float64Array(ids.length * d);
  for (let i = 0; i < ids.length; i++) {
    for (let k = 0; k < d; k++) out[i * d + k] = at(table, at(ids, i) * d + k);
  }
  return out;
}

/** dTable [vocab, d] with dOut's rows added at their ids. */
export function refEmbeddingBackward(ids: Vec, dOut: Vec, vocab: number, d: number): Float64Array {
  const dTable = new Float64Array(vocab * d);
  for (let i = 0; i < ids.length; i++) {
    const row = at(ids, i) * d;
    for (let k = 0; k < d; k++) dTable[row + k] = at(dTable, row + k) + at(dOut, i * d + k);
  }
  return dTable;
}

/**
 * ∂f/∂x by central differences in float64, (f(x + h·e_i) − f(x − h·e_i)) / 2h for
 * every i: the independent check of every reference backward. x is restored.
 */
export function centralDifferences(f: (x: Float64Array) => number, x: Float64Array, h = 1e-5): Float64Array {
  const grad = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const saved = x[i] as number;
    x[i] = saved + h;
    const plus = f(x);
    x[i] = saved - h;
    const minus = f(x);
    x[i] = saved;
    grad[i] = (plus - minus) / (2 * h);
  }
  return grad;
}
