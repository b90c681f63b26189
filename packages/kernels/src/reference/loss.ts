// Slow, obvious float64 versions of the token log-probability ops, for tests.
import { at, type Vec } from "./vec.ts";

/** logprobs[i] = logits[i, t_i] − lse_i with lse_i = log Σ_j exp(logits[i, j]). */
export function refLogSoftmaxGather(
  logits: Vec,
  targets: Vec,
  n: number,
  vocab: number,
): { logprobs: Float64Array; lse: Float64Array } {
  const logprobs = new Float64Array(n);
  const lse = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) max = Math.max(max, at(logits, i * vocab + j));
    let sum = 0;
    for (let j = 0; j < vocab; j++) sum += Math.exp(at(logits, i * vocab + j) - max);
    lse[i] = max + Math.log(sum);
    logprobs[i] = at(logits, i * vocab + at(targets, i)) - at(lse, i);
  }
  return { logprobs, lse };
}

/** dLogits of L = Σ_i dLogprobs_i · logprobs_i: g_i · (onehot − softmax). */
export function refLogSoftmaxGatherBackward(
  logits: Vec,
  targets: Vec,
  dLogprobs: Vec,
  n: number,
  vocab: number,
): Float64Array {
  const { lse } = refLogSoftmaxGather(logits, targets, n, vocab);
  const dLogits = new Float64Array(n * vocab);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < vocab; j++) {
      const p = Math.exp(at(logits, i * vocab + j) - at(lse, i));
      dLogits[i * vocab + j] = at(dLogprobs, i) * ((j === at(targets, i) ? 1 : 0) - p);
    }
  }
  return dLogits;
}

/** logits [n, vocab] = hidden [n, d] · w [vocab, d]ᵀ. */
export function refUnembedLogits(hidden: Vec, w: Vec, n: number, d: number, vocab: number): Float64Array {
  const logits = new Float64Array(n * vocab);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < vocab; j++) {
      let sum = 0;
      for (let k = 0; k < d; k++) sum += at(hidden, i * d + k) * at(w, j * d + k);
      logits[i * vocab + j] = sum;
    }
  }
  return logits;
}

/** Gradients of L = Σ_i dLogprobs_i · logprobs_i(hidden · wᵀ) for hidden and w. */
export function refUnembedLogprobsBackward(
  hidden: Vec,
  w: Vec,
  targets: Vec,
  dLogprobs: Vec,
  n: number,
  d: number,
  vocab: number,
): { dHidden: Float64Array; dW: Float64Array } {
  const logits = refUnembedLogits(hidden, w, n, d, vocab);
  const g = refLogSoftmaxGatherBackward(logits, targets, dLogprobs, n, vocab);
  const dHidden = new Float64Array(n * d);
  const dW = new Float64Array(vocab * d);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < vocab; j++) {
      const gij = at(g, i * vocab + j);
      if (gij === 0) continue;
      for (let k = 0; k < d; k++) {
        dHidden[i * d + k] = at(dHidden, i * d + k) + gij * at(w, j * d + k);
        dW[j * d + k] = at(dW, j * d + k) + gij * at(hidden, i * d + k);
      }
    }
  }
  return { dHidden, dW };
}
