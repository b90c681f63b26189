// The slow, obvious definition of the sampler's draw, in float64 with a full sort:
// what the native sampleRows is tested against (and what the engine's JavaScript
// sampler did before it moved to native code).
import { at, type Vec } from "./vec.ts";

export interface RefSampleParams {
  temperature: number;
  /** ≤ 0 = off. */
  topK: number;
  /** 1 = off. */
  topP: number;
  /** 0 = off. */
  minP: number;
}

/** The tokens a draw can return, in the order the uniform number walks them, with their probabilities. */
export interface RefDistribution {
  tokens: number[];
  probs: number[];
}

/**
 * The distribution a draw samples at temperature T > 0: with no filter every
 * token with any mass in vocabulary order; else the candidates by logit
 * (descending, ties to the lower id) cut to top-k, then to the smallest prefix
 * whose mass over the top-k reaches top-p, then to p ≥ minP · p_max.
 */
export function refSampleDistribution(logits: Vec, p: RefSampleParams): RefDistribution {
  const n = logits.length;
  const scaled = Array.from({ length: n }, (_, i) => at(logits, i) / p.temperature);
  const filtered = p.topK > 0 || p.topP < 1 || p.minP > 0;
  let ids = Array.from({ length: n }, (_, i) => i);
  if (filtered) ids.sort((a, b) => at(logits, b) - at(logits, a) || a - b);
  if (p.topK > 0) ids = ids.slice(0, p.topK);
  const max = ids.reduce((m, i) => Math.max(m, scaled[i] as number), Number.NEGATIVE_INFINITY);
  const weight = (i: number) => Math.exp((scaled[i] as number) - max);
  const z = ids.reduce((s, i) => s + weight(i), 0);
  if (p.topP < 1) {
    let mass = 0;
    let kept = 0;
    while (kept < ids.length && mass < p.topP) mass += weight(ids[kept++] as number) / z;
    ids = ids.slice(0, kept);
  }
  if (p.minP > 0) ids = ids.filter((i) => weight(i) >= p.minP);
  ids = ids.filter((i) => weight(i) > 0);
  const zKept = ids.reduce((s, i) => s + weight(i), 0);
  return { tokens: ids, probs: ids.map((i) => weight(i) / zKept) };
}

/** The token a uniform number u in [0, 1) picks (argmax, ties to the lower id, at temperature 0). */
export function refSampleToken(logits: Vec, p: RefSampleParams, u: number): number {
  if (p.temperature === 0) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (at(logits, i) > at(logits, best)) best = i;
    return best;
  }
  return refDrawFrom(refSampleDistribution(logits, p), u);
}

/** Inverse-CDF draw of a distribution at u in [0, 1). */
export function refDrawFrom({ tokens, probs }: RefDistribution, u: number): number {
  let rest = u;
  for (let i = 0; i < tokens.length; i++) {
    rest -= probs[i] as number;
    if (rest < 0) return tokens[i] as number;
  }
  return tokens[tokens.length - 1] as number;
}

/** log softmax(logits)[token] at temperature 1. */
export function refLogprob(logits: Vec, token: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, at(logits, i));
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(at(logits, i) - max);
  return at(logits, token) - max - Math.log(sum);
}

/** The k most likely tokens of logits (larger first, ties to the lower id) with their logprobs, by a full sort. */
export function refTopK(logits: Vec, k: number): [number, number][] {
  const ids = Array.from({ length: logits.length }, (_, i) => i);
  const key = (i: number) => (Number.isNaN(at(logits, i)) ? Number.NEGATIVE_INFINITY : at(logits, i));
  ids.sort((a, b) => key(b) - key(a) || a - b);
  return ids.slice(0, k).map((id) => [id, refLogprob(logits, id)]);
}
