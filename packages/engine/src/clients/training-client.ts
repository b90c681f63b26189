// The protocol's TrainingClient over a PolicySession, without the network: the
// in-process service's clients and the worker's server-side jobs both use it.
// Calls run strictly in submission order, as Tinker's clients expect.
import type {
  AdamParamsInput,
  ApiFuture,
  ForwardBackwardOutput,
  OptimStepOutput,
  SamplingClient,
  SavedState,
  SavedWeights,
  TextTokenizerLike,
  TrainingClient,
} from "@opentinker/protocol";
import type { BaseModel } from "../base-model.ts";
import type { Policy } from "../policy/policy.ts";
import type { PolicySession } from "../session/policy-session.ts";
import { OrderedQueue } from "./futures.ts";

export function tokenizerOf(base: BaseModel): NonNullable<BaseModel["tokenizer"]> {
  if (!base.tokenizer) throw new RangeError(`base model ${base.name} has no tokenizer`);
  return base.tokenizer;
}

export interface TrainingClientOptions {
  /** A sampling client over one of the policy's published handles. */
  sampling: (handle: string) => Promise<SamplingClient>;
  /** The server-side job the client trains for: its snapshots and checkpoints are recorded under it. */
  jobId?: string;
}

export class InProcessTrainingClient implements TrainingClient {
  private readonly queue = new OrderedQueue();

  constructor(
    readonly session: PolicySession,
    private readonly options: TrainingClientOptions,
  ) {}

  get policy(): Policy {
    return this.session.policy;
  }

  get adapterId(): string {
    return this.session.where.adapter;
  }

  private submit<T>(work: () => T | Promise<T>): Promise<ApiFuture<T>> {
    return Promise.resolve(this.queue.submit(work));
  }

  forward(...call: Parameters<TrainingClient["forward"]>): Promise<ApiFuture<ForwardBackwardOutput>> {
    return this.submit(() => this.session.forward(...call));
  }

  forwardBackward(...call: Parameters<TrainingClient["forwardBackward"]>) {
    return this.submit(() => this.session.forwardBackward(...call));
  }

  optimStep(adam?: AdamParamsInput): Promise<ApiFuture<OptimStepOutput>> {
    return this.submit(() => this.session.optimStep(adam));
  }

  saveWeightsForSampler(_name: string): Promise<ApiFuture<SavedWeights>> {
    return this.submit(() => this.session.publish(this.options.jobId));
  }

  saveState(name: string): Promise<ApiFuture<SavedState>> {
    return this.submit(async () => ({
      path: (await this.session.checkpoint(name, this.options.jobId)).path,
    }));
  }

  loadState(path: string): Promise<ApiFuture<void>> {
    return this.submit(() => this.session.restore(path));
  }

  async createSamplingClient(handle?: string): Promise<SamplingClient> {
    const resolved = handle ?? (await (await this.saveWeightsForSampler("latest")).result()).handle;
    return this.options.sampling(resolved);
  }

  getTokenizer(): TextTokenizerLike {
    return tokenizerOf(this.policy.base);
  }
}
