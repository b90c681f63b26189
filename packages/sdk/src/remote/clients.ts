// Remote implementations of the client interfaces (DESIGN.md §2) over the REST
// API: the same RL and SFT loops run against a server as in-process.
import {
  type AdamParamsInput,
  type AdapterInfo,
  type ApiFuture,
  type Datum,
  type ForwardBackwardOutput,
  type FutureRef,
  type LoraConfig,
  type LossFn,
  type LossFnConfig,
  type ModelInput,
  type OptimStepOutput,
  type PromptLogprobsOptions,
  REQUEST_OUTPUTS,
  type SampleResponse,
  type SamplingClient,
  type SamplingParamsInput,
  type SavedState,
  type SavedWeights,
  type ServiceClient,
  type SnapshotInfo,
  type TextTokenizerLike,
  type TokenizerFiles,
  type TrainingClient,
} from "@opentinker/protocol";
import { createTextTokenizer, type TextTokenizer } from "@opentinker/tokenizer";
import type { z } from "zod";
import { Api, type RemoteOptions } from "./api.ts";
import { RemoteFuture } from "./future.ts";

export class RemoteServiceClient implements ServiceClient {
  readonly api: Api;
  private readonly tokenizers = new Map<string, Promise<TextTokenizer>>();

  constructor(options: RemoteOptions) {
    this.api = new Api(options);
  }

  /** The base model's tokenizer, fetched once (the same files the workers load). */
  tokenizer(baseModel: string): Promise<TextTokenizer> {
    let tokenizer = this.tokenizers.get(baseModel);
    if (!tokenizer) {
      tokenizer = this.api
        .request<TokenizerFiles>("GET", `/v1/models/${encodeURIComponent(baseModel)}/tokenizer`)
        .then((files) =>
          createTextTokenizer(files.tokenizerJson, files.tokenizerConfig, {
            tokenizerPath: `${baseModel}/tokenizer.json`,
            configPath: `${baseModel}/tokenizer_config.json`,
            ...(files.chatTemplate
              ? { chatTemplate: { text: files.chatTemplate, path: `${baseModel}/chat_template.jinja` } }
              : {}),
          }),
        );
      tokenizer.catch(() => this.tokenizers.delete(baseModel));
      this.tokenizers.set(baseModel, tokenizer);
    }
    return tokenizer;
  }

  /** Creates a LoRA adapter on the server and a training client over it. */
  async createLoraTrainingClient(config: LoraConfig & { name?: string }): Promise<TrainingClient> {
    const adapter = await this.api.request<AdapterInfo>("POST", "/v1/adapters", {
      name: config.name ?? `adapter-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      baseModel: config.baseModel,
      kind: "LORA",
      rank: config.rank,
      ...(config.alpha === undefined ? {} : { alpha: config.alpha }),
      ...(config.trainAttn === undefined ? {} : { trainAttn: config.trainAttn }),
      ...(config.trainMlp === undefined ? {} : { trainMlp: config.trainMlp }),
      ...(config.trainUnembed === undefined ? {} : { trainUnembed: config.trainUnembed }),
      ...(config.seed === undefined ? {} : { seed: config.seed }),
    });
    return this.trainingClientFor(adapter.id);
  }

  /** A training client over an existing adapter of the team. */
  async trainingClientFor(adapterId: string): Promise<RemoteTrainingClient> {
    const adapter = await this.api.request<AdapterInfo>(
      "GET",
      `/v1/adapters/${encodeURIComponent(adapterId)}`,
    );
    return new RemoteTrainingClient(this, adapter.id, await this.tokenizer(adapter.baseModel));
  }

  async createSamplingClient(policy: { handle: string } | { baseModel: string }): Promise<SamplingClient> {
    if ("baseModel" in policy)
      return new RemoteSamplingClient(
        this.api,
        policy,
        policy.baseModel,
        await this.tokenizer(policy.baseModel),
      );
    // Resolved by the server within the key's team: another team's handle answers as an unknown one.
    const snapshot = await this.api.request<SnapshotInfo>(
      "GET",
      `/v1/snapshots/lookup?handle=${encodeURIComponent(policy.handle)}`,
    );
    return new RemoteSamplingClient(
      this.api,
      policy,
      policy.handle,
      await this.tokenizer(snapshot.baseModel),
    );
  }
}

/** How long a sampling call may hold its request open for the result. */
const INLINE_WAIT_MS = 30_000;

async function submit<T>(
  api: Api,
  route: string,
  body: unknown,
  output: z.ZodType<T>,
): Promise<ApiFuture<T>> {
  return new RemoteFuture(api, await api.request<FutureRef>("POST", route, body), output);
}

export class RemoteTrainingClient implements TrainingClient {
  constructor(
    private readonly service: RemoteServiceClient,
    readonly adapterId: string,
    private readonly tokenizer: TextTokenizer,
  ) {}

  private call<T>(route: string, body: object, output: z.ZodType<T>): Promise<ApiFuture<T>> {
    return submit(this.service.api, `/v1/training/${route}`, { adapterId: this.adapterId, ...body }, output);
  }

  /** A forward pass over datums, with (forward-backward) or without (forward) the backward pass. */
  private pass(
    route: "forward" | "forward-backward",
    data: Datum[],
    lossFn: LossFn,
    lossFnConfig: Partial<LossFnConfig> | undefined,
  ): Promise<ApiFuture<ForwardBackwardOutput>> {
    return this.call(
      route,
      { data, lossFn, ...(lossFnConfig ? { lossFnConfig } : {}) },
      REQUEST_OUTPUTS.FORWARD_BACKWARD,
    );
  }

  readonly forward: TrainingClient["forward"] = (data, lossFn, lossFnConfig) =>
    this.pass("forward", data, lossFn, lossFnConfig);

  readonly forwardBackward: TrainingClient["forwardBackward"] = (data, lossFn, lossFnConfig) =>
    this.pass("forward-backward", data, lossFn, lossFnConfig);

  optimStep(adam?: AdamParamsInput): Promise<ApiFuture<OptimStepOutput>> {
    return this.call("optim-step", adam ? { adam } : {}, REQUEST_OUTPUTS.OPTIM_STEP);
  }

  saveWeightsForSampler(name: string): Promise<ApiFuture<SavedWeights>> {
    return this.call("save-weights-for-sampler", { name }, REQUEST_OUTPUTS.SAVE_WEIGHTS_FOR_SAMPLER);
  }

  saveState(name: string): Promise<ApiFuture<SavedState>> {
    return this.call("save-state", { name }, REQUEST_OUTPUTS.SAVE_STATE);
  }

  async loadState(path: string): Promise<ApiFuture<void>> {
    const future = await this.call("load-state", { path }, REQUEST_OUTPUTS.LOAD_STATE);
    return { result: async () => void (await future.result()) };
  }

  async createSamplingClient(handle?: string): Promise<SamplingClient> {
    const resolved = handle ?? (await (await this.saveWeightsForSampler("latest")).result()).handle;
    return new RemoteSamplingClient(this.service.api, { handle: resolved }, resolved, this.tokenizer);
  }

  getTokenizer(): TextTokenizerLike {
    return this.tokenizer;
  }
}

export class RemoteSamplingClient implements SamplingClient {
  constructor(
    private readonly api: Api,
    private readonly ref: { handle: string } | { baseModel: string },
    readonly policy: string,
    private readonly tokenizer: TextTokenizer,
  ) {}

  // Sampling calls are not pipelined behind each other (rollouts issue them in
  // parallel), so they ask for the result in the same round trip.
  sample(
    prompt: ModelInput,
    numSamples: number,
    params: SamplingParamsInput,
    options: PromptLogprobsOptions = {},
  ): Promise<ApiFuture<SampleResponse>> {
    return submit(
      this.api,
      "/v1/sampling/sample",
      { policy: this.ref, prompt, numSamples, params, ...options, waitMs: INLINE_WAIT_MS },
      REQUEST_OUTPUTS.SAMPLE,
    );
  }

  computeLogprobs(sequence: ModelInput): Promise<ApiFuture<(number | null)[]>> {
    return submit(
      this.api,
      "/v1/sampling/compute-logprobs",
      { policy: this.ref, sequence, waitMs: INLINE_WAIT_MS },
      REQUEST_OUTPUTS.COMPUTE_LOGPROBS,
    );
  }

  getTokenizer(): TextTokenizerLike {
    return this.tokenizer;
  }
}
