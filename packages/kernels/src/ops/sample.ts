import { loadNative } from "../loader.ts";

export interface SampleBinding {
  sampleRows(
    logits: Float32Array,
    rows: number,
    vocab: number,
    rowOf: Int32Array,
    temperatures: Float64Array,
    topK: Int32Array,
    topP: Float64Array,
    minP: Float64Array,
    uniforms: Float64Array,
    tokens: Int32Array,
    logprobs: Float64Array,
  ): void;
  scoreRows(
    logits: Float32Array,
    rows: number,
    vocab: number,
    targets: Int32Array,
    k: number,
    logprobs: Float64Array,
    topIds: Int32Array,
    topLogprobs: Float64Array,
  ): void;
}

/** The draws of one call, one entry per draw, [m] each. */
export interface SampleDraws {
  /** The logits row each draw reads (a prompt's n completions share one). */
  rowOf: Int32Array;
  /** ≥ 0; 0 takes the argmax (ties to the lower id) whatever the filters. */
  temperatures: Float64Array;
  /** Keep the k most likely tokens; ≤ 0 = off. */
  topK: Int32Array;
  /** Smallest nucleus (over the top-k, at the draw's temperature) reaching this mass; 1 = off. */
  topP: Float64Array;
  /** Keep tokens with probability ≥ minP · the largest; 0 = off. */
  minP: Float64Array;
  /** The draw's uniform number in [0, 1) (from the caller's seeded generator). */
  uniforms: Float64Array;
}

/** Draws of `m` length, filters off and temperature 1: the caller fills what it needs. */
export function sampleDraws(m: number): SampleDraws {
  return {
    rowOf: new Int32Array(m),
    temperatures: new Float64Array(m).fill(1),
    topK: new Int32Array(m),
    topP: new Float64Array(m).fill(1),
    minP: new Float64Array(m),
    uniforms: new Float64Array(m),
  };
}

/**
 * One token per draw from logits [rows, vocab], in one native call, draws in
 * parallel. Without a filter, inverse-CDF sampling of softmax(logits / T) in
 * vocabulary order; with top-k, top-p or min-p, over the kept candidates in
 * order of logit (descending, ties to the lower id): top-k, then top-p over the
 * top-k, then min-p. -inf logits are never drawn. logprobs[i] is log π(token)
 * at temperature 1, whatever the filters and temperature.
 */
export function sampleRows(
  logits: Float32Array,
  vocab: number,
  draws: SampleDraws,
): { tokens: Int32Array; logprobs: Float64Array } {
  const m = draws.rowOf.length;
  const rows = vocab > 0 ? Math.floor(logits.length / vocab) : 0;
  const out = { tokens: new Int32Array(m), logprobs: new Float64Array(m) };
  const { rowOf, temperatures, topK, topP, minP, uniforms } = draws;
  loadNative().sampleRows(
    logits,
    rows,
    vocab,
    rowOf,
    temperatures,
    topK,
    topP,
    minP,
    uniforms,
    out.tokens,
    out.logprobs,
  );
  return out;
}

/** What scoreRows returns: per row, the target's logprob and the row's k most likely tokens. */
export interface RowScores {
  /** [rows]: log π(targets[r]) at temperature 1. */
  logprobs: Float64Array;
  /** [rows, k]: the k most likely tokens of each row, most likely first (ties to the lower id). */
  topIds: Int32Array;
  /** [rows, k]: their logprobs at temperature 1. */
  topLogprobs: Float64Array;
}

/**
 * Scores given tokens against logits [rows, vocab], in one native call, rows in
 * parallel: log π(targets[r]) at temperature 1, and (k > 0) each row's k most
 * likely tokens in the order sampleRows walks its candidates, by partial
 * selection (a heap of k, no sort of the vocabulary). The log-sum-exp is
 * sampleRows' own, so a token's score equals its logprob when sampled.
 */
export function scoreRows(logits: Float32Array, vocab: number, targets: Int32Array, k: number): RowScores {
  const rows = targets.length;
  const out = {
    logprobs: new Float64Array(rows),
    topIds: new Int32Array(rows * k),
    topLogprobs: new Float64Array(rows * k),
  };
  loadNative().scoreRows(logits, rows, vocab, targets, k, out.logprobs, out.topIds, out.topLogprobs);
  return out;
}
