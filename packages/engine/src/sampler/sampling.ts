// Choosing the next tokens from rows of logits (temperature, top-k, top-p, min-p)
// with seeded generators, all draws of a sampler step in one native call
// (kernels' sampleRows: partial selection, no sort of the vocabulary here). The
// logprob convention of the sampler: the returned logprob is log π(token) under
// the model's distribution at temperature 1, whatever the sampling temperature
// and filters, so the trainer's importance ratio is exact.
import { type Backend, type F32, sampleDraws } from "@opentinker/kernels";
import type { SamplingParams } from "@opentinker/protocol";
import { defaultBackend } from "../base-model.ts";
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
 * Samples every draw from logits [rows, vocab] in one call on the logits'
 * device: only the tokens and their logprobs come back. Each draw takes exactly
 * one number from its generator, whatever its parameters, so a seeded
 * completion replays the same tokens. Temperature 0 is greedy; ties break
 * toward the lower token id.
 */
export function sampleTokens(
  be: Backend,
  logits: F32,
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
  if (draws.length === 0) return [];
  const out = be.sampleRows(logits, vocab, d);
  const tokens = be.download(out.tokens);
  const logprobs = be.download(out.logprobs);
  // Read before the buffers go back: a download may share their memory.
  const sampled = draws.map((_, i) => ({ token: tokens[i] as number, logprob: logprobs[i] as number }));
  be.free(out.tokens);
  be.free(out.logprobs);
  return sampled;
}

/** Samples one token from one row of host logits, on the CPU (sampleTokens with a single draw). */
export function sampleToken(logits: Float32Array, params: SamplingParams, rng: Rng): SampledToken {
  const be = defaultBackend();
  return sampleTokens(be, be.upload(logits), logits.length, [{ row: 0, params, rng }])[0] as SampledToken;
}
