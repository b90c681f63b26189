import { loadNative } from "../loader.ts";

export interface SampleBinding {
  sampleRows(
    logits: Float32Array,
    n: number,
    vocab: number,
    temperatures: Float32Array,
    uniforms: Float64Array,
    tokens: Int32Array,
    lse: Float32Array,
  ): void;
}

/**
 * One token per row of logits [n, vocab], rows in parallel: argmax where the
 * temperature is 0, else inverse-CDF sampling of softmax(logits / T) at the given
 * uniform number in [0, 1). lse receives each row's temperature-1 log-sum-exp, so
 * log π(token) = logits[token] − lse.
 */
export function sampleRows(
  logits: Float32Array,
  vocab: number,
  temperatures: Float32Array,
  uniforms: Float64Array,
): { tokens: Int32Array; lse: Float32Array } {
  const n = temperatures.length;
  const out = { tokens: new Int32Array(n), lse: new Float32Array(n) };
  loadNative().sampleRows(logits, n, vocab, temperatures, uniforms, out.tokens, out.lse);
  return out;
}
