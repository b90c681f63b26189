// The checks of a sampling call, before anything is loaded or queued: a bad call
// is a RangeError naming the argument, and nothing else in flight is affected.
import {
  type ModelInput,
  type PromptLogprobsOptions,
  type SamplingParams,
  type SamplingParamsInput,
  ZPromptLogprobsOptions,
  ZSamplingParams,
} from "@opentinker/protocol";
import type { z } from "zod";
import type { ModelConfig } from "../model/index.ts";
import { type PreparedInput, prepareInput } from "../vision/input.ts";

/**
 * Checks an input and converts it to token ids and prepared images. Plain token
 * arrays keep their own messages (`sample: prompt[3] is …`).
 */
export function checkedInput(
  config: ModelConfig,
  input: ModelInput | readonly number[],
  op: string,
  name: string,
): PreparedInput {
  if (!Array.isArray(input)) return prepareInput(input as ModelInput, config, op, name);
  const tokens = input as readonly number[];
  const vocab = config.vocabSize;
  for (const [i, t] of tokens.entries()) {
    if (!Number.isInteger(t) || t < 0 || t >= vocab)
      throw new RangeError(`${op}: ${name}[${i}] is ${t}, expected a token id in [0, ${vocab})`);
  }
  return { tokens: Int32Array.from(tokens), images: [] };
}

export interface SampleCall {
  prompt: ModelInput | readonly number[];
  numSamples: number;
  paramsInput: SamplingParamsInput;
  promptLogprobs?: PromptLogprobsOptions;
}

/** What a checked call asks about its prompt. */
export interface PromptScoring {
  logprobs: boolean;
  /** Top-k prompt logprobs per position; 0 = none. */
  topk: number;
}

/** The first issue of a failed parse, as `sample: <prefix><path>: <message>`. */
function firstIssue(error: z.ZodError, prefix: string): RangeError {
  const issue = error.issues[0];
  return new RangeError(`sample: ${prefix}${issue?.path.join(".")}: ${issue?.message}`);
}

/** The cache a call must fit in. */
export interface CacheSize {
  blockSize: number;
  numBlocks: number;
}

/**
 * A sampling call's prompt and parameters, checked against the model and the
 * cache. maxTokens is cut at the end of the context, where generation ends with
 * "length" as it does at maxTokens.
 */
export function parseSampleCall(
  config: ModelConfig,
  cache: CacheSize,
  call: SampleCall,
): { input: PreparedInput; params: SamplingParams; scoring: PromptScoring } {
  const parsed = ZSamplingParams.safeParse(call.paramsInput);
  if (!parsed.success) throw firstIssue(parsed.error, "params.");
  const scoring = ZPromptLogprobsOptions.safeParse(call.promptLogprobs ?? {});
  if (!scoring.success) throw firstIssue(scoring.error, "");
  const { numSamples } = call;
  if (!Number.isInteger(numSamples) || numSamples < 1)
    throw new RangeError(`sample: numSamples must be ≥ 1, got ${numSamples}`);
  const input = checkedInput(config, call.prompt, "sample", "prompt");
  const promptLength = input.tokens.length;
  if (promptLength === 0) throw new RangeError("sample: the prompt is empty");
  const needed = Math.ceil((promptLength + 1) / cache.blockSize) + numSamples;
  if (needed > cache.numBlocks) {
    throw new RangeError(
      `sample: the prompt needs ${needed} KV blocks, more than the cache's ${cache.numBlocks}`,
    );
  }
  const limit = config.maxPositionEmbeddings;
  if (promptLength >= limit) {
    throw new RangeError(`sample: the prompt has ${promptLength} tokens, the model's context is ${limit}`);
  }
  return {
    input,
    params: { ...parsed.data, maxTokens: Math.min(parsed.data.maxTokens, limit - promptLength) },
    scoring: { logprobs: scoring.data.promptLogprobs, topk: scoring.data.topkPromptLogprobs },
  };
}
