// The client interfaces (DESIGN.md §2): the RL and SFT loops are written against
// these; a user's script gets remote implementations, a server-side job gets
// in-process ones from the engine.
import type { Datum } from "./datum.ts";
import type {
  AdamParamsInput,
  ForwardBackwardOutput,
  LossFn,
  LossFnConfig,
  OptimStepOutput,
} from "./losses.ts";
import type { ModelInput } from "./model-input.ts";
import type { PromptLogprobsOptions, SampleResponse, SamplingParamsInput } from "./sampling.ts";

/**
 * A request that has been accepted and ordered. Awaiting the call gives the
 * future; awaiting `result()` gives the output, so a loop can queue
 * forwardBackward and optimStep back to back and collect results later.
 */
export interface ApiFuture<T> {
  result(): Promise<T>;
}

export interface LoraConfig {
  baseModel: string;
  rank: number;
  /** LoRA alpha (default 32, as Tinker); the update is scaled by alpha / rank. */
  alpha?: number;
  trainAttn?: boolean;
  trainMlp?: boolean;
  trainUnembed?: boolean;
  seed?: number;
}

export interface SavedWeights {
  /** The opaque handle of the published snapshot. */
  handle: string;
  version: number;
}

export interface SavedState {
  /** Opaque path of the saved training state (weights, Adam moments, step). */
  path: string;
}

export interface TextTokenizerLike {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
}

export interface SamplingClient {
  /** The policy this client samples from (a handle or a base model name). */
  readonly policy: string;
  /**
   * `numSamples` completions of `prompt`. `options.promptLogprobs` fills the
   * response's promptLogprobs, `options.topkPromptLogprobs: k` (≤ 20) its
   * topkPromptLogprobs: the prompt's own scores, computed once for all samples
   * (with maxTokens 1 this is computeLogprobs plus the top k).
   */
  sample(
    prompt: ModelInput,
    numSamples: number,
    params: SamplingParamsInput,
    options?: PromptLogprobsOptions,
  ): Promise<ApiFuture<SampleResponse>>;
  /** Per-position logprobs of a given sequence (the first position: null). */
  computeLogprobs(sequence: ModelInput): Promise<ApiFuture<(number | null)[]>>;
  getTokenizer(): TextTokenizerLike;
}

export interface TrainingClient {
  forward(
    data: Datum[],
    lossFn: LossFn,
    lossFnConfig?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>>;
  forwardBackward(
    data: Datum[],
    lossFn: LossFn,
    lossFnConfig?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>>;
  optimStep(adam?: AdamParamsInput): Promise<ApiFuture<OptimStepOutput>>;
  /** Publishes an immutable snapshot for samplers. */
  saveWeightsForSampler(name: string): Promise<ApiFuture<SavedWeights>>;
  saveState(name: string): Promise<ApiFuture<SavedState>>;
  loadState(path: string): Promise<ApiFuture<void>>;
  /** A sampling client over the latest published snapshot (publishing one if none). */
  createSamplingClient(handle?: string): Promise<SamplingClient>;
  getTokenizer(): TextTokenizerLike;
}

export interface ServiceClient {
  createLoraTrainingClient(config: LoraConfig): Promise<TrainingClient>;
  createSamplingClient(policy: { handle: string } | { baseModel: string }): Promise<SamplingClient>;
}
