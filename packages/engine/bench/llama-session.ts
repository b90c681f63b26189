// Driving llama.cpp for the side by side (llama.ts): a model and a one-sequence
// context at a time, set up as our sampler runs (f32 K/V, the whole prompt in one
// batch), its logits over a sequence, its greedy tokens and its generation loop.
import type { ModelConfig } from "../src/model/index.ts";
import type { Llama, LlamaContextSequence, LlamaModel } from "./llama-cpp.ts";

/** The prompt length of the prefill measurement, and the batch both engines get. */
export const PREFILL = 512;

/** The tokens a context holds: llama.cpp's KV cache, and the KV cache of our sampler that serves the prefills. */
export const contextTokens = (config: ModelConfig) => Math.min(2 * PREFILL, config.maxPositionEmbeddings);

/** llama.cpp's logits [positions from..T-1, V] for the same tokens, from a fresh sequence. */
export async function llamaLogits(
  sequence: LlamaContextSequence,
  tokens: readonly number[],
  from: number,
  vocab: number,
): Promise<Float32Array> {
  await sequence.clearHistory();
  const out = await sequence.controlledEvaluate(
    tokens.map((t, i) => (i < from ? t : [t, { generateNext: { logits: true } }])),
  );
  const logits = new Float32Array((tokens.length - from) * vocab);
  for (let i = from; i < tokens.length; i++) {
    const row = out[i]?.next.logits;
    if (!row || row.size !== vocab) throw new Error(`llama.cpp gave ${row?.size ?? 0} logits at ${i}`);
    for (const [token, logit] of row) logits[(i - from) * vocab + token] = logit;
  }
  return logits;
}

/** Greedy tokens of llama.cpp's own generation loop. */
export async function llamaGreedy(
  sequence: LlamaContextSequence,
  input: number[],
  count: number,
): Promise<number[]> {
  await sequence.clearHistory();
  const tokens: number[] = [];
  for await (const token of sequence.evaluate(input, { temperature: 0 })) {
    tokens.push(token);
    if (tokens.length >= count) break;
  }
  return tokens;
}

/** Generates up to `count` tokens after `input`; returns how many came (an end-of-text token stops it). */
export async function llamaGenerate(
  sequence: LlamaContextSequence,
  input: number[],
  count: number,
  seed: number,
): Promise<number> {
  await sequence.clearHistory();
  let generated = 0;
  for await (const _ of sequence.evaluate(input, { temperature: 1, seed })) if (++generated >= count) break;
  return generated;
}

/**
 * llama.cpp's flash attention ("auto" turns it on for CPU) is not exact in f32:
 * with it, logits differ from ours by ~4e-3 (measured on the tiny and Qwen-shaped
 * models), without it by ~1e-6. So the check that the conversion is right runs
 * with it off; speed is measured both ways and ours is judged against the faster.
 */
export type FlashAttention = false | "auto";

/** Runs `use` on a fresh one-sequence context of `model`, then frees the context. */
export async function withContext<T>(
  model: LlamaModel,
  config: ModelConfig,
  threads: number,
  flashAttention: FlashAttention,
  use: (sequence: LlamaContextSequence) => Promise<T>,
): Promise<T> {
  const context = await model.createContext({
    contextSize: contextTokens(config),
    batchSize: PREFILL, // the whole prompt in one batch, as our maxTokensPerStep does
    sequences: 1,
    threads: { ideal: threads, min: threads },
    flashAttention,
    // f32 everywhere, like our engine (llama.cpp's default cache is f16).
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
  });
  try {
    return await use(context.getSequence());
  } finally {
    await context.dispose();
  }
}

export async function withModel<T>(
  llama: Llama,
  gguf: string,
  use: (model: LlamaModel) => Promise<T>,
): Promise<T> {
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  try {
    return await use(model);
  } finally {
    await model.dispose();
  }
}
