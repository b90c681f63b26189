// Choosing the next token from a row of logits (temperature, top-k, top-p) with a
// seeded generator, and the logprob convention of the sampler: the returned
// logprob is log π(token) under the model's distribution at temperature 1,
// whatever the sampling temperature, so the trainer's importance ratio is exact.
import { sampleRows } from "@opentinker/kernels";
import type { SamplingParams } from "@opentinker/protocol";
import type { Rng } from "../rng.ts";

export interface SampledToken {
  token: number;
  /** log softmax(logits)[token]: the temperature-1 distribution. */
  logprob: number;
}

/** log Σ exp(values[i]) over [0, n). */
function logSumExp(values: Float32Array | Float64Array, n: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) if ((values[i] as number) > max) max = values[i] as number;
  if (max === Number.NEGATIVE_INFINITY) return max;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp((values[i] as number) - max);
  return max + Math.log(sum);
}

/** Candidate ids sorted by logit, descending, cut to top-k (all when k ≤ 0). */
function candidates(logits: Float32Array, topK: number): number[] {
  const ids = Array.from({ length: logits.length }, (_, i) => i);
  ids.sort((a, b) => (logits[b] as number) - (logits[a] as number) || a - b);
  return topK > 0 ? ids.slice(0, topK) : ids;
}

/** Sampling from the whole vocabulary, natively (two passes over the logits, no allocation in JS). */
function sampleFull(logits: Float32Array, temperature: number, rng: Rng): SampledToken {
  const out = sampleRows(logits, logits.length, Float32Array.of(temperature), Float64Array.of(rng.next()));
  const token = out.tokens[0] as number;
  const logprob = (logits[token] as number) - (out.lse[0] as number);
  return { token, logprob };
}

/**
 * Samples one token. Deterministic for a given generator state; temperature 0 is
 * greedy. Ties break toward the lower token id.
 */
export function sampleToken(logits: Float32Array, params: SamplingParams, rng: Rng): SampledToken {
  const noFilter = params.topK <= 0 && params.topP >= 1;
  if (noFilter || params.temperature === 0) return sampleFull(logits, params.temperature, rng);
  const lseAll = logSumExp(logits, logits.length);
  const logprobOf = (token: number) => (logits[token] as number) - lseAll;
  const ids = noFilter ? null : candidates(logits, params.topK);
  const count = ids ? ids.length : logits.length;
  const scaled = new Float64Array(count);
  for (let i = 0; i < count; i++)
    scaled[i] = (logits[ids ? (ids[i] as number) : i] as number) / params.temperature;
  let lse = logSumExp(scaled, count);
  let kept = count;
  if (ids && params.topP < 1) {
    // Smallest prefix of the sorted candidates whose probability reaches topP.
    let mass = 0;
    kept = 0;
    while (kept < count && mass < params.topP) mass += Math.exp((scaled[kept++] as number) - lse);
    lse = logSumExp(scaled, kept);
  }
  let u = rng.next();
  let chosen = kept - 1;
  for (let i = 0; i < kept; i++) {
    u -= Math.exp((scaled[i] as number) - lse);
    if (u < 0) {
      chosen = i;
      break;
    }
  }
  const token = ids ? (ids[chosen] as number) : chosen;
  return { token, logprob: logprobOf(token) };
}
