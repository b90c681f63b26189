// The in-process clients a server-side job runs the SDK loops with: training
// goes straight to the adapter's state on this worker, sampling to this
// worker's sampler, and snapshots and checkpoints are recorded under the job.
import { InProcessSamplingClient, OrderedQueue } from "@opentinker/engine";
import type {
  AdamParamsInput,
  ApiFuture,
  Datum,
  ForwardBackwardOutput,
  LossFn,
  LossFnConfig,
  OptimStepOutput,
  SamplingClient,
  SavedState,
  SavedWeights,
  TextTokenizerLike,
  TrainingClient,
} from "@opentinker/protocol";
import type { AdapterSession } from "../adapter-session.ts";
import type { EngineHost } from "../engine-host.ts";

export class JobTrainingClient implements TrainingClient {
  private readonly queue = new OrderedQueue();

  /** `signal` aborts the job's sampling in flight (the job was cancelled, or the worker drains). */
  constructor(
    private readonly host: EngineHost,
    readonly session: AdapterSession,
    private readonly jobId: string,
    private readonly signal?: AbortSignal,
  ) {}

  forward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>> {
    return Promise.resolve(this.queue.submit(() => this.session.forward(data, lossFn, config)));
  }

  forwardBackward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
  ): Promise<ApiFuture<ForwardBackwardOutput>> {
    return Promise.resolve(this.queue.submit(() => this.session.forwardBackward(data, lossFn, config)));
  }

  optimStep(adam?: AdamParamsInput): Promise<ApiFuture<OptimStepOutput>> {
    return Promise.resolve(this.queue.submit(() => this.session.optimStep(adam)));
  }

  saveWeightsForSampler(_name: string): Promise<ApiFuture<SavedWeights>> {
    return Promise.resolve(this.queue.submit(() => this.session.saveWeightsForSampler(this.jobId)));
  }

  saveState(name: string): Promise<ApiFuture<SavedState>> {
    return Promise.resolve(
      this.queue.submit(async () => ({ path: (await this.session.saveState(name, this.jobId)).path })),
    );
  }

  loadState(path: string): Promise<ApiFuture<void>> {
    return Promise.resolve(this.queue.submit(() => this.session.loadState(path)));
  }

  async createSamplingClient(handle?: string): Promise<SamplingClient> {
    const resolved = handle ?? (await (await this.saveWeightsForSampler("latest")).result()).handle;
    return (await jobSampler(this.host, this.session.adapter, resolved, this.signal)).client;
  }

  getTokenizer(): TextTokenizerLike {
    return tokenizerOf(this.host, this.session.adapter.baseModelId);
  }
}

export function tokenizerOf(host: EngineHost, baseModelId: string) {
  const base = host.base(baseModelId);
  if (!base.model.tokenizer) throw new RangeError(`base model ${base.name} has no tokenizer`);
  return base.model.tokenizer;
}

/**
 * A job's sampler over one of its team's snapshots (resolved within the team,
 * and over the adapter's base model), sharing the worker's sampler fairly with
 * other teams' requests.
 */
export async function jobSampler(
  host: EngineHost,
  adapter: { teamId: string; baseModelId: string },
  handle: string,
  signal?: AbortSignal,
): Promise<{ client: SamplingClient; version: number }> {
  const record = await host.registry.resolveInTeam(adapter.teamId, handle);
  const base = host.base(adapter.baseModelId);
  if (record.baseModel !== base.name)
    throw new RangeError(
      `${handle} was trained over ${record.baseModel}, not the adapter's base model ${base.name}`,
    );
  const options = { tenant: adapter.teamId, ...(signal ? { signal } : {}) };
  return {
    client: new InProcessSamplingClient(host.sampler(adapter.baseModelId), record, base.model, options),
    version: record.version,
  };
}
