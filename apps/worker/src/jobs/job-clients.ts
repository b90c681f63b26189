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

  constructor(
    private readonly host: EngineHost,
    readonly session: AdapterSession,
    private readonly jobId: string,
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
    return samplingClient(this.host, this.session.adapter.baseModelId, resolved);
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

export function samplingClient(host: EngineHost, baseModelId: string, handle: string): SamplingClient {
  return new InProcessSamplingClient(host.sampler(baseModelId), handle, host.base(baseModelId).model);
}
