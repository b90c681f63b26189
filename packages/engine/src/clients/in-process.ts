// In-process implementations of the protocol's client interfaces: a server-side
// job runs the same RL / SFT loops as a user's script, without the network.
import type {
  ApiFuture,
  LoraConfig,
  ModelInput,
  PromptLogprobsOptions,
  SampleResponse,
  SamplingClient,
  SamplingParamsInput,
  ServiceClient,
  TextTokenizerLike,
} from "@opentinker/protocol";
import { LocalStore, type ObjectStore } from "@opentinker/store";
import type { BaseModel } from "../base-model.ts";
import { BASE_KEY, type PolicySource, policyKey } from "../sampler/policy-pool.ts";
import { type SampleOptions, Sampler, type SamplerOptions } from "../sampler/sampler.ts";
import { createPolicy, type PolicySpec } from "../session/create-policy.ts";
import { PolicySession } from "../session/policy-session.ts";
import { InMemoryPolicyRegistry } from "../session/registry.ts";
import { InMemorySnapshotRegistry, type SnapshotRegistry } from "../snapshots/registry.ts";
import { InProcessTrainingClient, tokenizerOf } from "./training-client.ts";

export interface InProcessOptions {
  /** Base models by name. */
  baseModels: ReadonlyMap<string, BaseModel>;
  store: ObjectStore;
  registry: SnapshotRegistry;
  /** The team the clients act for (part of every handle). */
  team: string;
  sampler?: Omit<SamplerOptions, "base" | "store" | "registry">;
}

let nextAdapter = 0;

export class InProcessServiceClient implements ServiceClient {
  private readonly samplers = new Map<string, Sampler>();
  /** Checkpoints in memory; snapshots go to the options' registry. */
  private readonly policies: InMemoryPolicyRegistry;

  constructor(private readonly options: InProcessOptions) {
    this.policies = new InMemoryPolicyRegistry(options.registry);
  }

  /** A service over local snapshot files in `dir` and an in-memory registry (scripts, tests). */
  static local(
    baseModels: readonly BaseModel[],
    dir: string,
    team: string,
    sampler?: InProcessOptions["sampler"],
  ): InProcessServiceClient {
    return new InProcessServiceClient({
      baseModels: new Map(baseModels.map((b) => [b.name, b])),
      store: new LocalStore(dir),
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
    const { baseModel, ...spec } = config;
    return this.trainingClient(baseModel, { kind: "lora", ...spec }, `adapter-${nextAdapter++}`);
  }

  /**
   * A full-parameter policy: its own copy of every base weight. Each published
   * snapshot is a whole model, which the shared sampler serves beside the adapters.
   */
  async createFullTrainingClient(config: { baseModel: string }): Promise<InProcessTrainingClient> {
    return this.trainingClient(config.baseModel, { kind: "full" }, `full-${nextAdapter++}`);
  }

  private async trainingClient(baseName: string, spec: PolicySpec, adapter: string) {
    const policy = createPolicy(this.base(baseName), spec);
    const where = { teamId: this.team, team: this.team, adapter };
    const session = await PolicySession.open(policy, where, { store: this.store, registry: this.policies });
    return new InProcessTrainingClient(session, {
      sampling: async (handle) =>
        new InProcessSamplingClient(this.samplerFor(baseName), handle, this.base(baseName)),
    });
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

  get store(): ObjectStore {
    return this.options.store;
  }

  get registry(): SnapshotRegistry {
    return this.options.registry;
  }

  get team(): string {
    return this.options.team;
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
    options: PromptLogprobsOptions = {},
  ): Promise<ApiFuture<SampleResponse>> {
    const run = this.sampler.sample(this.source, prompt, numSamples, params, { ...this.options, ...options });
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
