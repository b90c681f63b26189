// In-process implementations of the protocol's client interfaces: a server-side
// job runs the same RL / SFT loops as a user's script, without the network.
import type {
  AdamParamsInput,
  ApiFuture,
  Datum,
  ForwardBackwardOutput,
  LoraConfig,
  LossFn,
  LossFnConfig,
  ModelInput,
  OptimStepOutput,
  SampleResponse,
  SamplingClient,
  SamplingParamsInput,
  SavedState,
  SavedWeights,
  ServiceClient,
  TextTokenizerLike,
  TrainingClient,
} from "@opentinker/protocol";
import type { BaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { BASE_KEY, type PolicySource, policyKey } from "../sampler/policy-pool.ts";
import { type SampleOptions, Sampler, type SamplerOptions } from "../sampler/sampler.ts";
import { loadState, saveState, saveWeightsForSampler } from "../snapshots/publish.ts";
import { InMemorySnapshotRegistry, type SnapshotRegistry } from "../snapshots/registry.ts";
import { LocalSnapshotStore, type SnapshotStore, type StoredObject } from "../snapshots/store.ts";
import { Trainer } from "../trainer/trainer.ts";
import { OrderedQueue } from "./futures.ts";

export interface InProcessOptions {
  /** Base models by name. */
  baseModels: ReadonlyMap<string, BaseModel>;
  store: SnapshotStore;
  registry: SnapshotRegistry;
  /** The team the clients act for (part of every handle). */
  team: string;
  sampler?: Omit<SamplerOptions, "base" | "store" | "registry">;
}

function tokenizerOf(base: BaseModel): TextTokenizerLike {
  if (!base.tokenizer) throw new Error(`base model ${base.name} has no tokenizer`);
  return base.tokenizer;
}

let nextAdapter = 0;

export class InProcessServiceClient implements ServiceClient {
  private readonly samplers = new Map<string, Sampler>();

  constructor(private readonly options: InProcessOptions) {}

  /** A service over local snapshot files in `dir` and an in-memory registry (scripts, tests). */
  static local(
    baseModels: readonly BaseModel[],
    dir: string,
    team: string,
    sampler?: InProcessOptions["sampler"],
  ): InProcessServiceClient {
    return new InProcessServiceClient({
      baseModels: new Map(baseModels.map((b) => [b.name, b])),
      store: new LocalSnapshotStore(dir),
      registry: new InMemorySnapshotRegistry(),
      team,
      ...(sampler ? { sampler } : {}),
    });
  }

  base(name: string): BaseModel {
    const base = this.options.baseModels.get(name);
    if (!base)
      throw new RangeError(
        `unknown base model "${name}" (known: ${[...this.options.baseModels.keys()].join(", ")})`,
      );
    return base;
  }

  /** One sampler per base model, shared by every sampling client over it. */
  samplerFor(baseName: string): Sampler {
    let sampler = this.samplers.get(baseName);
    if (!sampler) {
      const { store, registry } = this.options;
      sampler = new Sampler({ ...this.options.sampler, base: this.base(baseName), store, registry });
      this.samplers.set(baseName, sampler);
    }
    return sampler;
  }

  async createLoraTrainingClient(config: LoraConfig): Promise<InProcessTrainingClient> {
    const base = this.base(config.baseModel);
    const policy = createLoraPolicy(base, {
      rank: config.rank,
      alpha: config.alpha ?? 32,
      trainAttn: config.trainAttn ?? true,
      trainMlp: config.trainMlp ?? true,
      trainUnembed: config.trainUnembed ?? false,
      seed: config.seed ?? 0,
    });
    return new InProcessTrainingClient(this, policy, config.baseModel, `adapter-${nextAdapter++}`);
  }

  /**
   * A full-parameter policy: its own copy of every base weight. Each published
   * snapshot is a whole model, which the shared sampler serves beside the adapters.
   */
  async createFullTrainingClient(config: { baseModel: string }): Promise<InProcessTrainingClient> {
    const policy = createFullPolicy(this.base(config.baseModel));
    return new InProcessTrainingClient(this, policy, config.baseModel, `full-${nextAdapter++}`);
  }

  async createSamplingClient(policy: { handle: string } | { baseModel: string }): Promise<SamplingClient> {
    if ("baseModel" in policy)
      return new InProcessSamplingClient(
        this.samplerFor(policy.baseModel),
        BASE_KEY,
        this.base(policy.baseModel),
      );
    const record = await this.options.registry.resolve(policy.handle);
    const names = [...this.options.baseModels.keys()];
    const baseName = record.baseModel ?? (names.length === 1 ? names[0] : undefined);
    if (!baseName) throw new RangeError(`${policy.handle} does not say which base model it was trained over`);
    return new InProcessSamplingClient(this.samplerFor(baseName), policy.handle, this.base(baseName));
  }

  get store(): SnapshotStore {
    return this.options.store;
  }

  get registry(): SnapshotRegistry {
    return this.options.registry;
  }

  get team(): string {
    return this.options.team;
  }
}

export class InProcessTrainingClient implements TrainingClient {
  private readonly queue = new OrderedQueue();
  private readonly trainer: Trainer;
  private readonly states = new Map<string, StoredObject>();

  constructor(
    private readonly service: InProcessServiceClient,
    readonly policy: Policy,
    private readonly baseName: string,
    readonly adapterId: string,
  ) {
    this.trainer = new Trainer(policy);
  }

  private get where() {
    return { team: this.service.team, adapter: this.adapterId };
  }

  async forward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>> {
    return this.queue.submit(() => this.trainer.forward(data, lossFn, config));
  }

  async forwardBackward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>> {
    return this.queue.submit(() => this.trainer.forwardBackward(data, lossFn, config));
  }

  async optimStep(adam?: AdamParamsInput): Promise<ApiFuture<OptimStepOutput>> {
    return this.queue.submit(() => this.trainer.optimStep(adam));
  }

  async saveWeightsForSampler(_name: string): Promise<ApiFuture<SavedWeights>> {
    return this.queue.submit(async () => {
      const record = await saveWeightsForSampler(
        this.policy,
        this.service.store,
        this.service.registry,
        this.where,
      );
      return { handle: record.handle, version: record.version };
    });
  }

  async saveState(name: string): Promise<ApiFuture<SavedState>> {
    return this.queue.submit(async () => {
      const stored = await saveState(this.policy, this.service.store, this.where, name);
      this.states.set(stored.path, stored);
      return { path: stored.path };
    });
  }

  async loadState(path: string): Promise<ApiFuture<void>> {
    return this.queue.submit(async () => {
      const stored = this.states.get(path);
      if (!stored) throw new RangeError(`loadState: no saved state at ${path} for this client`);
      await loadState(this.policy, this.service.store, stored);
    });
  }

  async createSamplingClient(handle?: string): Promise<SamplingClient> {
    const resolved = handle ?? (await (await this.saveWeightsForSampler("latest")).result()).handle;
    return new InProcessSamplingClient(
      this.service.samplerFor(this.baseName),
      resolved,
      this.service.base(this.baseName),
    );
  }

  getTokenizer(): TextTokenizerLike {
    return tokenizerOf(this.policy.base);
  }
}

export class InProcessSamplingClient implements SamplingClient {
  readonly policy: string;

  /** `tenant` shares the sampler fairly with other tenants' requests (a service passes the team). */
  constructor(
    private readonly sampler: Sampler,
    private readonly source: PolicySource,
    private readonly base: BaseModel,
    private readonly options: SampleOptions = {},
  ) {
    this.policy = policyKey(source);
  }

  async sample(
    prompt: ModelInput,
    numSamples: number,
    params: SamplingParamsInput,
  ): Promise<ApiFuture<SampleResponse>> {
    const run = this.sampler.sample(this.source, prompt, numSamples, params, this.options);
    run.catch(() => undefined);
    return { result: () => run };
  }

  async computeLogprobs(sequence: ModelInput): Promise<ApiFuture<(number | null)[]>> {
    const run = this.sampler.computeLogprobs(this.source, sequence);
    run.catch(() => undefined);
    return { result: () => run };
  }

  getTokenizer(): TextTokenizerLike {
    return tokenizerOf(this.base);
  }
}
