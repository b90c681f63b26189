// Choosing the next tokens from rows of logits (temperature, top-k, top-p, min-p)
// with seeded generators, all draws of a sampler step in one native call
// (kernels' sampleRows: partial selection, no sort of the vocabulary here). The
// logprob convention of the sampler: the returned logprob is log π(token) under
// the model's distribution at temperature 1, whatever the sampling temperature
// and filters, so the trainer's importance ratio is exact.
import { sampleDraws, sampleRows } from "@opentinker/kernels";
import type { SamplingParams } from "@opentinker/protocol";
import type { Rng } from "../rng.ts";

export interface SampledToken {
  token: number;
  /** log softmax(logits)[token]: the temperature-1 distribution. */
  logprob: number;
}

/** One token to draw: the logits row it reads, its parameters and its generator. */
export interface TokenDraw {
  row: number;
  params: SamplingParams;
  rng: Rng;
}

/**
 * Samples every draw from logits [rows, vocab] in one native call. Each draw
 * takes exactly one number from its generator, whatever its parameters, so a
 * seeded completion replays the same tokens. Temperature 0 is greedy; ties break
 * toward the lower token id.
 */
export function sampleTokens(
  logits: Float32Array,
  vocab: number,
  draws: readonly TokenDraw[],
): SampledToken[] {
  const d = sampleDraws(draws.length);
  draws.forEach(({ row, params, rng }, i) => {
    d.rowOf[i] = row;
    d.temperatures[i] = params.temperature;
    d.topK[i] = params.topK;
    d.topP[i] = params.topP;
    d.minP[i] = params.minP;
    d.uniforms[i] = rng.next();
  });
  const out = sampleRows(logits, vocab, d);
  return draws.map((_, i) => ({ token: out.tokens[i] as number, logprob: out.logprobs[i] as number }));
}

/** Samples one token from one row of logits (sampleTokens with a single draw). */
export function sampleToken(logits: Float32Array, params: SamplingParams, rng: Rng): SampledToken {
  return sampleTokens(logits, logits.length, [{ row: 0, params, rng }])[0] as SampledToken;
}
