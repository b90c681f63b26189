// The multi-LoRA sampler (DESIGN.md C9): continuous batching over a paged KV cache
// with prefix sharing. Requests name a policy by handle (or the base model), join
// and leave between steps; each step mixes chunked-prefill rows and decode rows of
// any adapters and versions, bounded by a token budget. A full cache queues
// requests (back-pressure) and never fails them; an aborted request frees its blocks.
// Prompts may hold images (vision-language base models): their soft tokens are
// computed once per request with the policy's vision weights and fed in place of
// the placeholder's embedding during prefill; decode is text-only.
//
// This is the front: it checks calls, turns them into requests and runs steps.
// Which rows a step computes is the scheduler's (scheduler.ts, tenants' fairness
// included); the forward over them is the model step's (model-step.ts).
//
// Prompt logprobs (and the top k per position) come from the prefill itself: a
// call that asks for them computes every prompt position (no prefix-cache hits),
// and each step scores its prompt rows' logits natively, in the same unembedding
// as the step's sampled rows, once for all the call's samples. The other design, a
// second pass through the training forward (computeLogprobs), costs a whole extra
// forward and its tape over the prompt; this one the unembedding of the prompt
// rows (BENCHMARKS.md, "prompt logprobs"). Both agree with the trainer within 1e-4
// (sampler-prompt-logprobs.test.ts). Calls that do not ask run as before.
import {
  type ModelInput,
  type PromptLogprobsOptions,
  type SampledSequence,
  type SampleResponse,
  type SamplingParams,
  type SamplingParamsInput,
  whenAborted,
} from "@opentinker/protocol";
import type { ObjectStore } from "@opentinker/store";
import type { BaseModel } from "../base-model.ts";
import { Arena } from "../nn/arena.ts";
import { frozenParams } from "../policy/frozen.ts";
import { Rng } from "../rng.ts";
import type { SnapshotRegistry } from "../snapshots/registry.ts";
import { KvCacheManager } from "./kv-cache.ts";
import { ModelStep, type RowScore, type SampledRow, type StepRequest } from "./model-step.ts";
import { withPackedWeights } from "./packed-params.ts";
import { PagedKv } from "./paged-model.ts";
import { PolicyPool, type PolicySource } from "./policy-pool.ts";
import { checkedInput, type PromptScoring, parseSampleCall } from "./sample-call.ts";
import type { SampledToken } from "./sampling.ts";
import { type Row, type ScheduledCompletion, Scheduler } from "./scheduler.ts";
import { type StopCheck, stopChecker } from "./stop.ts";

/** Token slots per KV cache block, unless a sampler is given its own. */
export const DEFAULT_BLOCK_SIZE = 16;

/** A sampler's budgets unless given its own: K/V cache (all layers) and loaded policy versions. */
export const DEFAULT_KV_CACHE_BYTES = 256 << 20;
export const DEFAULT_POLICY_BYTES = 1 << 30;

export interface SamplerOptions {
  base: BaseModel;
  store: ObjectStore;
  registry: SnapshotRegistry;
  /** Bytes of K/V cache (all layers). */
  kvCacheBytes?: number;
  blockSize?: number;
  /** Bytes of loaded policy versions (LoRA adapters and full models). */
  policyBytes?: number;
  /** Token rows per step: bounds a step's latency. */
  maxTokensPerStep?: number;
  /**
   * Batch-invariant matmuls (default true): a request's logprobs are bit for bit
   * the same whatever else shares its steps, so one team's adapter trains
   * identically with or without other teams' traffic. false trades that for
   * faster long prefills (see BENCHMARKS.md).
   */
  batchInvariant?: boolean;
}

export class AbortError extends Error {
  override name = "AbortError";
}

/** promptLogprobs and topkPromptLogprobs ask for the prompt's own scores (see ZPromptLogprobsOptions). */
export interface SampleOptions extends PromptLogprobsOptions {
  /** Aborting frees the request's blocks and rejects it with AbortError. */
  signal?: AbortSignal;
  /** Who the request is for (a team): tenants share admission and each step fairly. */
  tenant?: string;
}

interface Completion extends ScheduledCompletion {
  index: number;
  rng: Rng;
  tokens: number[];
  logprobs: number[];
  stopReason: "stop" | "length" | null;
}

/** A scored prompt's results so far, per prompt position (null until scored, and where there is none). */
interface PromptScores {
  logprobs: (number | null)[];
  top: ([number, number][] | null)[];
}

interface Request extends StepRequest {
  seed: number;
  params: SamplingParams;
  scoring: PromptScoring;
  scores: PromptScores;
  stop: StopCheck;
  completions: Completion[];
  resolve: (response: SampleResponse) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

let nextRequest = 0;

/** The completions that draw at a row: a decode row's own, or every completion of a prompt's last row (they share its logits). */
const drawers = ({ output, request }: Row<Request>): readonly Completion[] =>
  output.kind === "decode" ? [output.completion] : output.kind === "prompt" ? request.completions : [];

/**
 * Completion i of a request seeded s draws from the stream of seed s + i, so a
 * group of n samples equals n single requests seeded s, s + 1, …, s + n − 1.
 */
function completionRng(seed: number, index: number): Rng {
  return new Rng((seed + index) >>> 0).fork(0x5eed);
}

const unscored = (length: number): PromptScores => ({
  logprobs: new Array<number | null>(length).fill(null),
  top: new Array<[number, number][] | null>(length).fill(null),
});

export class Sampler {
  readonly pool: PolicyPool;
  readonly kv: KvCacheManager;
  private readonly scheduler: Scheduler<Request>;
  private readonly model: ModelStep;
  private scheduled = false;

  constructor(private readonly options: SamplerOptions) {
    const { base } = options;
    const matmul = options.batchInvariant === false ? "auto" : "rows";
    // The batch-invariant product runs over the base's matrices packed once.
    const baseParams = matmul === "rows" ? withPackedWeights(frozenParams(base)) : frozenParams(base);
    const blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    const bytesPerBlock = PagedKv.bytesPerBlock(baseParams.shape, blockSize);
    const numBlocks = Math.max(
      1,
      Math.floor((options.kvCacheBytes ?? DEFAULT_KV_CACHE_BYTES) / bytesPerBlock),
    );
    this.kv = new KvCacheManager({ numBlocks, blockSize });
    this.pool = new PolicyPool(
      base,
      options.store,
      options.registry,
      options.policyBytes ?? DEFAULT_POLICY_BYTES,
    );
    this.scheduler = new Scheduler(this.kv, options.maxTokensPerStep ?? 256);
    this.model = new ModelStep({ baseParams, pool: this.pool, kv: this.kv, matmul });
  }

  /**
   * Samples `numSamples` completions of `prompt` from `policy` (a handle, or
   * "base"). The prompt is token ids, or a ModelInput whose image chunks the
   * base model's vision part turns into soft tokens.
   */
  async sample(
    policy: PolicySource,
    prompt: ModelInput | readonly number[],
    numSamples: number,
    paramsInput: SamplingParamsInput,
    options: SampleOptions = {},
  ): Promise<SampleResponse> {
    const { signal, promptLogprobs, topkPromptLogprobs } = options;
    const { input, params, scoring } = parseSampleCall(this.options.base.config, this.kv, {
      prompt,
      numSamples,
      paramsInput,
      promptLogprobs: { promptLogprobs, topkPromptLogprobs },
    });
    if (signal?.aborted) throw new AbortError("sample: aborted before it started");
    const entry = await this.pool.acquire(policy);
    if (signal?.aborted) {
      this.pool.release(entry);
      throw new AbortError("sample: aborted while its policy was loading");
    }
    // The images' soft tokens stay on the device until the request settles.
    const imageMemory = new Arena(this.options.base.backend);
    let images: Request["images"];
    try {
      images = this.model.images(entry, input.images, imageMemory);
    } catch (error) {
      imageMemory.release();
      this.pool.release(entry);
      throw error;
    }
    const { config, tokenizer } = this.options.base;
    const eos = [...config.eosTokenIds, ...(tokenizer?.eosTokenIds ?? [])];
    return new Promise<SampleResponse>((resolve, reject) => {
      const id = `r${nextRequest++}`;
      const seed = params.seed ?? Math.floor(Math.random() * 2 ** 31);
      const request: Request = {
        id,
        tenant: options.tenant ?? "",
        policyKey: entry.key,
        seed,
        entry,
        prompt: Array.from(input.tokens),
        images,
        scorePrompt: scoring.logprobs || scoring.topk > 0,
        promptTopK: scoring.topk,
        params,
        scoring,
        scores: unscored(input.tokens.length),
        stop: stopChecker(params, eos, tokenizer),
        state: { kind: "waiting" },
        completions: Array.from({ length: numSamples }, (_, index) => ({
          id: `${id}/${index}`,
          index,
          rng: completionRng(seed, index),
          tokens: [],
          logprobs: [],
          stopReason: null,
        })),
        resolve,
        reject,
        cleanup: () => {},
      };
      // One listener per signal, however many of its requests are in flight (a job's are dozens).
      const onAbort = () => this.finish(request, new AbortError(`sample: request ${id} was aborted`));
      const unlisten = signal ? whenAborted(signal, onAbort) : () => {};
      request.cleanup = () => {
        unlisten();
        imageMemory.release();
      };
      this.scheduler.enqueue(request);
      this.schedule();
    });
  }

  /**
   * Per-position logprobs of `sequence` under `policy` (the first position has
   * none, nor do image positions: they hold placeholders), through the training
   * forward, so they agree with the trainer's.
   */
  async computeLogprobs(
    policy: PolicySource,
    sequence: ModelInput | readonly number[],
  ): Promise<(number | null)[]> {
    const { tokens, images } = checkedInput(
      this.options.base.config,
      sequence,
      "computeLogprobs",
      "sequence",
    );
    if (tokens.length < 2) throw new RangeError("computeLogprobs: needs at least 2 tokens");
    const entry = await this.pool.acquire(policy);
    try {
      return this.model.logprobs(entry, tokens, images);
    } finally {
      this.pool.release(entry);
    }
  }

  stats() {
    return { ...this.scheduler.stats(), kv: this.kv.stats(), policyBytes: this.pool.loadedBytes };
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      try {
        if (this.step()) this.schedule();
      } catch (error) {
        // An internal failure fails the requests in flight, not the process.
        for (const r of this.scheduler.requests())
          this.finish(r, error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** One engine step; false when there is nothing left to do. */
  private step(): boolean {
    const plan = this.scheduler.plan();
    for (const request of plan.finished) this.settle(request);
    if (plan.preempted) this.restart(plan.preempted);
    if (plan.rows.length === 0) return plan.preempted !== undefined;
    const { sampled, scores } = this.model.run(plan.rows, plan.copies, (row) =>
      drawers(row).map((c) => ({ params: row.request.params, rng: c.rng })),
    );
    for (const score of scores) this.recordScore(score);
    this.advanceStep(sampled);
    this.scheduler.committed(plan.rows);
    return true;
  }

  /** A scored prompt row's result lands on the prompt position it predicts. */
  private recordScore({ row, logprob, top }: RowScore<Request>): void {
    const { scores, scoring } = row.request;
    scores.logprobs[row.position + 1] = logprob;
    scores.top[row.position + 1] = top.slice(0, scoring.topk);
  }

  /** A preempted request starts over, with the same seeds (its prompt is scored again). */
  private restart(request: Request): void {
    request.scores = unscored(request.prompt.length);
    for (const c of request.completions) {
      c.tokens = [];
      c.logprobs = [];
      c.stopReason = null;
      c.rng = completionRng(request.seed, c.index);
    }
  }

  /** Records each sampling row's tokens (a prompt's last row is then prefilled), row by row, checking for stops. */
  private advanceStep(sampled: readonly SampledRow<Request>[]): void {
    for (const { row, tokens } of sampled) {
      if (row.output.kind === "prompt") this.scheduler.prefilled(row.request);
      drawers(row).forEach((c, i) => {
        this.advance(row.request, c, tokens[i] as SampledToken);
      });
    }
  }

  /** Records a completion's next token and checks for a stop. */
  private advance(request: Request, c: Completion, sampled: SampledToken): void {
    c.tokens.push(sampled.token);
    c.logprobs.push(sampled.logprob);
    c.stopReason = request.stop(c.tokens);
    if (this.scheduler.advanced(request, c)) this.settle(request);
  }

  /** Takes a request out and settles it (once; later calls do nothing). */
  private finish(request: Request, error?: Error): void {
    if (request.state.kind === "done") return;
    this.scheduler.remove(request);
    this.settle(request, error);
  }

  /** Settles a request the scheduler has let go of. */
  private settle(request: Request, error?: Error): void {
    request.cleanup();
    this.pool.release(request.entry);
    if (error) {
      request.reject(error);
      return;
    }
    const sequences: SampledSequence[] = request.completions.map((c) => ({
      tokens: c.tokens,
      logprobs: c.logprobs,
      stopReason: c.stopReason ?? "length",
    }));
    const { scoring, scores } = request;
    request.resolve({
      sequences,
      ...(scoring.logprobs ? { promptLogprobs: scores.logprobs } : {}),
      ...(scoring.topk > 0 ? { topkPromptLogprobs: scores.top } : {}),
    });
  }
}
