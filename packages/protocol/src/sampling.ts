import { z } from "zod";

/**
 * The knobs of a token draw and their bounds: a sampling call's params and a
 * job's sampling settings both take them. The filters apply in this order:
 * top-k, then top-p over the top-k, then min-p.
 */
export const ZSamplingKnobs = z.object({
  /** 0 = greedy. */
  temperature: z.number().min(0).finite(),
  /** Keep the k most likely tokens; 0 or -1 = off. */
  topK: z.number().int().min(-1),
  /** Nucleus sampling; 1 = off. */
  topP: z.number().gt(0).max(1),
  /** Keep tokens with probability ≥ minP × the most likely one's; 0 = off. */
  minP: z.number().min(0).max(1),
});

const knobs = ZSamplingKnobs.shape;
export const ZSamplingParams = z.object({
  maxTokens: z.number().int().positive().max(1_000_000),
  temperature: knobs.temperature.default(1),
  topK: knobs.topK.default(-1),
  topP: knobs.topP.default(1),
  minP: knobs.minP.default(0),
  /** Same seed and same request → same tokens. */
  seed: z.number().int().optional(),
  /** Stop strings or stop token ids; the stop sequence is included in the output. */
  stop: z.union([z.array(z.string().min(1)), z.array(z.number().int().nonnegative())]).default([]),
});
export type SamplingParams = z.infer<typeof ZSamplingParams>;
export type SamplingParamsInput = z.input<typeof ZSamplingParams>;

/**
 * The most top-k prompt logprobs a call may ask for: 20, the cap of OpenAI's
 * `top_logprobs` and vLLM's default `max_logprobs`. Every prompt position
 * carries k pairs in the stored result (a 32K-token prompt at k = 20 is 640K
 * pairs), and distillation or KL estimates need only the head of the distribution.
 */
export const MAX_TOPK_PROMPT_LOGPROBS = 20;

/** What a sampling call may ask for about its own prompt, besides the samples. */
export const ZPromptLogprobsOptions = z.object({
  /** Fill the response's promptLogprobs. */
  promptLogprobs: z.boolean().default(false),
  /** Fill the response's topkPromptLogprobs with the k most likely tokens per position; 0 = off. */
  topkPromptLogprobs: z.number().int().min(0).max(MAX_TOPK_PROMPT_LOGPROBS).default(0),
});
export type PromptLogprobsOptions = z.input<typeof ZPromptLogprobsOptions>;

export const ZStopReason = z.enum(["stop", "length"]);

export const ZSampledSequence = z.object({
  tokens: z.array(z.number().int().nonnegative()),
  /**
   * log π(token) under the model's distribution at temperature 1, whatever the
   * sampling temperature, so importance ratios against the trainer are exact.
   */
  logprobs: z.array(z.number()),
  stopReason: ZStopReason,
});
export type SampledSequence = z.infer<typeof ZSampledSequence>;

export const ZSampleResponse = z.object({
  sequences: z.array(ZSampledSequence),
  /**
   * When asked (promptLogprobs): per prompt position, log π(token | the tokens
   * before it) at temperature 1, as computeLogprobs gives for the prompt; null
   * at position 0 and at image placeholder positions.
   */
  promptLogprobs: z.array(z.number().nullable()).optional(),
  /**
   * When asked (topkPromptLogprobs = k > 0): per prompt position, the k most
   * likely tokens of the distribution that predicts it, as [tokenId, logprob at
   * temperature 1], most likely first (ties to the lower id; fewer when the
   * vocabulary is smaller); null where promptLogprobs is.
   */
  topkPromptLogprobs: z
    .array(z.array(z.tuple([z.number().int().nonnegative(), z.number()])).nullable())
    .optional(),
  /** The policy version that produced the samples. */
  policyVersion: z.number().int().nonnegative().optional(),
});
export type SampleResponse = z.infer<typeof ZSampleResponse>;
