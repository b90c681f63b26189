// The multi-LoRA sampler (DESIGN.md C9): continuous batching over a paged KV cache
// with prefix sharing. Requests name a policy by handle (or the base model), join
// and leave between steps; each step mixes chunked-prefill rows and decode rows of
// any adapters and versions, bounded by a token budget. A full cache queues
// requests (back-pressure) and never fails them; an aborted request frees its blocks.
// Requests carry a tenant (a service passes the team): admission and each step's
// token budget are shared round robin across tenants, so one team's big rollout
// cannot starve another team's small request.
// Prompts may hold images (vision-language base models): their soft tokens are
// computed once per request with the policy's vision weights and fed in place of
// the placeholder's embedding during prefill; decode is text-only.

import { createLoraTable, type LoraAdapterWeights } from "@opentinker/kernels";
import {
  type ModelInput,
  type SampledSequence,
  type SampleResponse,
  type SamplingParams,
  type SamplingParamsInput,
  ZSamplingParams,
} from "@opentinker/protocol";
import type { BaseModel } from "../base-model.ts";
import type { LinearParams } from "../nn/linear.ts";
import type { ModelParams } from "../nn/params.ts";
import { forward } from "../nn/transformer.ts";
import { softTokens } from "../nn/vision.ts";
import { frozenParams } from "../policy/frozen.ts";
import { Rng } from "../rng.ts";
import type { SnapshotRegistry } from "../snapshots/registry.ts";
import type { SnapshotStore } from "../snapshots/store.ts";
import { pack } from "../trainer/batching.ts";
import { type PreparedImage, type PreparedInput, prepareInput } from "../vision/input.ts";
import { KvCacheManager } from "./kv-cache.ts";
import { PagedKv, pagedForward, type StepBatch } from "./paged-model.ts";
import {
  BASE_KEY,
  type LoraEntryWeights,
  MODULES,
  PolicyPool,
  type PolicySource,
  type PoolEntry,
} from "./policy-pool.ts";
import { sampleToken } from "./sampling.ts";
import { type StopCheck, stopChecker } from "./stop.ts";

export interface SamplerOptions {
  base: BaseModel;
  store: SnapshotStore;
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

export interface SampleOptions {
  /** Aborting frees the request's blocks and rejects it with AbortError. */
  signal?: AbortSignal;
  /** Who the request is for (a team): tenants share admission and each step fairly. */
  tenant?: string;
}

interface Completion {
  id: string;
  index: number;
  rng: Rng;
  tokens: number[];
  logprobs: number[];
  stopReason: "stop" | "length" | null;
}

/** A prompt image with its soft tokens under the request's policy. */
interface RequestImage {
  start: number;
  length: number;
  hash: string;
  soft: Float32Array; // [length, hidden]
}

interface Request {
  id: string;
  tenant: string;
  settled: boolean;
  seed: number;
  entry: PoolEntry;
  prompt: number[];
  /** Empty for a text-only prompt. */
  images: RequestImage[];
  params: SamplingParams;
  numSamples: number;
  stop: StopCheck;
  parentId: string;
  phase: "waiting" | "prefill" | "forking" | "decode";
  completions: Completion[];
  firstLogits: Float32Array | null;
  resolve: (response: SampleResponse) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

interface Row {
  request: Request;
  seqId: string;
  token: number;
  position: number;
  kvSlot: number;
  /** An image position's input: its soft token [hidden], in place of the token's embedding. */
  soft?: Float32Array;
  /** Called with the row's logits when it is the last row of a prompt or a decode row. */
  onLogits?: (logits: Float32Array) => void;
}

let nextRequest = 0;

/** The soft token [hidden] fed at prompt position `p`, when an image covers it. */
function softTokenAt(images: readonly RequestImage[], p: number): Float32Array | undefined {
  for (const image of images) {
    if (p < image.start || p >= image.start + image.length) continue;
    const H = image.soft.length / image.length;
    return image.soft.subarray((p - image.start) * H, (p - image.start + 1) * H);
  }
  return undefined;
}

/** Tenants in a fixed order, starting after `last` (round robin across calls). */
function rotation(tenants: Iterable<string>, last: string): string[] {
  const sorted = [...new Set(tenants)].sort();
  const start = sorted.findIndex((t) => t > last);
  return start <= 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
}

/**
 * Completion i of a request seeded s draws from the stream of seed s + i, so a
 * group of n samples equals n single requests seeded s, s + 1, …, s + n − 1.
 */
function completionRng(seed: number, index: number): Rng {
  return new Rng((seed + index) >>> 0).fork(0x5eed);
}

export class Sampler {
  readonly pool: PolicyPool;
  readonly kv: KvCacheManager;
  private readonly cache: PagedKv;
  private readonly baseParams: ModelParams;
  private readonly maxTokensPerStep: number;
  private readonly waiting: Request[] = [];
  private readonly active: Request[] = [];
  private scheduled = false;
  /** Prompt positions computed by prefill steps (cached prefixes are not). */
  private prefillTokens = 0;
  /** The tenant admitted last and the one served first last step: the next turn starts after each. */
  private admittedLast = "";
  private servedFirst = "";

  constructor(private readonly options: SamplerOptions) {
    const { base } = options;
    this.baseParams = frozenParams(base);
    const blockSize = options.blockSize ?? 16;
    const bytesPerBlock = PagedKv.bytesPerBlock(this.baseParams.shape, blockSize);
    const numBlocks = Math.max(1, Math.floor((options.kvCacheBytes ?? 256 << 20) / bytesPerBlock));
    this.kv = new KvCacheManager({ numBlocks, blockSize });
    this.cache = new PagedKv(this.baseParams.shape, numBlocks, blockSize);
    this.pool = new PolicyPool(base, options.store, options.registry, options.policyBytes ?? 1 << 30);
    this.maxTokensPerStep = options.maxTokensPerStep ?? 256;
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
    const { signal } = options;
    const parsed = ZSamplingParams.safeParse(paramsInput);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new RangeError(`sample: params.${issue?.path.join(".")}: ${issue?.message}`);
    }
    if (!Number.isInteger(numSamples) || numSamples < 1)
      throw new RangeError(`sample: numSamples must be ≥ 1, got ${numSamples}`);
    const input = this.prepare(prompt, "sample", "prompt");
    if (input.tokens.length === 0) throw new RangeError("sample: the prompt is empty");
    const { blockSize, numBlocks } = this.kv;
    const promptLength = input.tokens.length;
    const needed = Math.ceil((promptLength + 1) / blockSize) + numSamples;
    if (needed > numBlocks) {
      throw new RangeError(
        `sample: the prompt needs ${needed} KV blocks, more than the cache's ${numBlocks}`,
      );
    }
    const limit = this.options.base.config.maxPositionEmbeddings;
    if (promptLength >= limit) {
      throw new RangeError(`sample: the prompt has ${promptLength} tokens, the model's context is ${limit}`);
    }
    // Generation ends with "length" at the end of the context, as at maxTokens.
    const params = { ...parsed.data, maxTokens: Math.min(parsed.data.maxTokens, limit - promptLength) };
    if (signal?.aborted) throw new AbortError("sample: aborted before it started");
    const entry = await this.pool.acquire(policy);
    if (signal?.aborted) {
      this.pool.release(entry);
      throw new AbortError("sample: aborted while its policy was loading");
    }
    let images: RequestImage[];
    try {
      images = this.requestImages(entry, input.images);
    } catch (error) {
      this.pool.release(entry);
      throw error;
    }
    const eos = [
      ...this.options.base.config.eosTokenIds,
      ...(this.options.base.tokenizer?.eosTokenIds ?? []),
    ];
    return new Promise<SampleResponse>((resolve, reject) => {
      const id = `r${nextRequest++}`;
      const seed = params.seed ?? Math.floor(Math.random() * 2 ** 31);
      const request: Request = {
        id,
        tenant: options.tenant ?? "",
        settled: false,
        seed,
        entry,
        prompt: Array.from(input.tokens),
        images,
        params,
        numSamples,
        stop: stopChecker(params, eos, this.options.base.tokenizer),
        parentId: `${id}/prompt`,
        phase: "waiting",
        completions: Array.from({ length: numSamples }, (_, index) => ({
          id: `${id}/${index}`,
          index,
          rng: completionRng(seed, index),
          tokens: [],
          logprobs: [],
          stopReason: null,
        })),
        firstLogits: null,
        resolve,
        reject,
        cleanup: () => {},
      };
      const onAbort = () => this.finish(request, new AbortError(`sample: request ${id} was aborted`));
      signal?.addEventListener("abort", onAbort, { once: true });
      request.cleanup = () => signal?.removeEventListener("abort", onAbort);
      this.waiting.push(request);
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
    const { tokens, images } = this.prepare(sequence, "computeLogprobs", "sequence");
    if (tokens.length < 2) throw new RangeError("computeLogprobs: needs at least 2 tokens");
    const entry = await this.pool.acquire(policy);
    try {
      const batch = pack([{ tokens: tokens.slice(0, -1), targets: tokens.slice(1), images }]);
      const logprobs: (number | null)[] = [null, ...forward(this.singlePolicyParams(entry), batch).logprobs];
      for (const image of images) logprobs.fill(null, image.start, image.start + image.length);
      return logprobs;
    } finally {
      this.pool.release(entry);
    }
  }

  /**
   * Checks an input and converts it to token ids and prepared images. Plain token
   * arrays keep their own messages (`sample: prompt[3] is …`).
   */
  private prepare(input: ModelInput | readonly number[], op: string, name: string): PreparedInput {
    const config = this.options.base.config;
    if (!Array.isArray(input)) return prepareInput(input as ModelInput, config, op, name);
    const tokens = input as readonly number[];
    const vocab = config.vocabSize;
    for (const [i, t] of tokens.entries()) {
      if (!Number.isInteger(t) || t < 0 || t >= vocab)
        throw new RangeError(`${op}: ${name}[${i}] is ${t}, expected a token id in [0, ${vocab})`);
    }
    return { tokens: Int32Array.from(tokens), images: [] };
  }

  /** Soft tokens of the prompt's images under the policy's own vision weights (full-parameter ones train them). */
  private requestImages(entry: PoolEntry, images: readonly PreparedImage[]): RequestImage[] {
    if (images.length === 0) return [];
    const vision = entry.kind === "full" ? entry.params?.vision : this.baseParams.vision;
    if (!vision) throw new Error(`policy ${entry.key} has no vision part`);
    return images.map((image) => ({
      start: image.start,
      length: image.length,
      hash: image.hash,
      soft: softTokens(vision, image.patches, image.length),
    }));
  }

  /** The weights of one policy as training-forward parameters. */
  private singlePolicyParams(entry: PoolEntry): ModelParams {
    if (entry.kind === "base") return this.baseParams;
    if (entry.kind === "full") return entry.params as ModelParams;
    const lora = entry.lora as LoraEntryWeights;
    const bind = (p: LinearParams, w: LoraAdapterWeights | undefined): LinearParams => {
      if (!w) return p;
      const table = createLoraTable(p.dIn, p.dOut, [w]);
      return { ...p, lora: { table, grads: table } };
    };
    const layers = this.baseParams.layers.map((layer, l) => {
      const out = { ...layer };
      for (const m of MODULES) out[m] = bind(layer[m], lora.layers[l]?.[m]);
      return out;
    });
    const unembed = lora.unembed
      ? {
          ...this.baseParams.unembed,
          lora: bind(
            {
              dIn: this.baseParams.shape.hiddenSize,
              dOut: this.baseParams.shape.vocabSize,
              weight: this.baseParams.unembed.weight,
            },
            lora.unembed,
          ).lora,
        }
      : this.baseParams.unembed;
    return { ...this.baseParams, layers, unembed };
  }

  stats() {
    return {
      waiting: this.waiting.length,
      active: this.active.length,
      prefillTokens: this.prefillTokens,
      kv: this.kv.stats(),
      policyBytes: this.pool.loadedBytes,
    };
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
        for (const r of [...this.active, ...this.waiting])
          this.finish(r, error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** Frees a request's sequences and settles it (once; later calls do nothing). */
  private finish(request: Request, error?: Error): void {
    if (request.settled) return;
    request.settled = true;
    const at = this.active.indexOf(request);
    if (at >= 0) this.active.splice(at, 1);
    const waitingAt = this.waiting.indexOf(request);
    if (waitingAt >= 0) this.waiting.splice(waitingAt, 1);
    this.kv.free(request.parentId);
    for (const c of request.completions) this.kv.free(c.id);
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
    request.resolve({ sequences });
  }

  /**
   * Admits waiting requests while the cache has room: each turn goes to the next
   * tenant after the one admitted last, and takes that tenant's oldest request.
   * When it does not fit, admission stops there (nobody overtakes it: it is
   * first once blocks free up).
   */
  private admit(): void {
    for (;;) {
      const heads = new Map<string, Request>();
      for (const r of this.waiting) if (!heads.has(r.tenant)) heads.set(r.tenant, r);
      const tenant = rotation(heads.keys(), this.admittedLast)[0];
      if (tenant === undefined) return;
      const request = heads.get(tenant) as Request;
      // Keep one block per completion free for its first token.
      const { prompt, images } = request;
      if (!this.kv.canAllocate(prompt, request.entry.key, request.numSamples, images)) return;
      if (!this.kv.admit(request.parentId, request.entry.key, prompt, images)) return;
      this.waiting.splice(this.waiting.indexOf(request), 1);
      this.admittedLast = tenant;
      request.phase = "prefill";
      this.active.push(request);
    }
  }

  /** One engine step; false when there is nothing left to do. */
  private step(): boolean {
    this.admit();
    this.forkReady();
    const rows = this.buildRows();
    if (rows.length === 0) return this.active.length > 0 || this.waiting.length > 0 ? this.unblock() : false;
    this.run(rows);
    return true;
  }

  /** Nothing could run: preempt the newest active request (it restarts, with the same seeds). */
  private unblock(): boolean {
    const victim = this.active[this.active.length - 1];
    if (!victim) return false;
    this.active.pop();
    this.kv.free(victim.parentId);
    for (const c of victim.completions) {
      this.kv.free(c.id);
      c.tokens = [];
      c.logprobs = [];
      c.stopReason = null;
      c.rng = completionRng(victim.seed, c.index);
    }
    victim.phase = "waiting";
    victim.firstLogits = null;
    this.waiting.unshift(victim);
    return true;
  }

  /** Prompts whose prefill finished: sample each completion's first token, then fork. */
  private forkReady(): void {
    for (const request of [...this.active]) {
      if (request.phase !== "forking" || !request.firstLogits) continue;
      const live = request.completions.filter((c) => !c.stopReason);
      if (
        !this.kv.fork(
          request.parentId,
          live.map((c) => c.id),
        )
      )
        continue;
      this.kv.free(request.parentId);
      request.phase = "decode";
      if (live.length === 0) this.finish(request);
    }
  }

  /**
   * The rows of the next step, within the token budget: decode rows first, then
   * prefill chunks, each shared round robin across tenants (one decode row per
   * tenant per turn; the prefill budget split evenly), so every tenant with work
   * gets a share of every step.
   */
  private buildRows(): Row[] {
    const rows: Row[] = [];
    const decoding = this.activeByTenant("decode");
    const prefilling = this.activeByTenant("prefill");
    const tenants = rotation([...decoding.keys(), ...prefilling.keys()], this.servedFirst);
    this.servedFirst = tenants[0] ?? this.servedFirst;
    let budget = this.maxTokensPerStep;
    const queues = tenants.map((t) =>
      (decoding.get(t) ?? []).flatMap((r) => r.completions.map((c) => ({ r, c }))),
    );
    const next = queues.map(() => 0);
    for (let served = true; budget > 0 && served; ) {
      served = false;
      for (const [i, queue] of queues.entries()) {
        // This tenant's next completion that takes a row this step.
        while (budget > 0 && (next[i] as number) < queue.length) {
          const { r, c } = queue[(next[i] as number)++] as { r: Request; c: Completion };
          if (!this.decodeRow(r, c, rows)) continue;
          budget--;
          served = true;
          break;
        }
      }
    }
    const withPrefill = tenants.filter((t) => prefilling.has(t));
    for (const [i, tenant] of withPrefill.entries()) {
      let share = Math.ceil(budget / (withPrefill.length - i));
      for (const request of prefilling.get(tenant) ?? []) {
        if (share === 0) break;
        const taken = this.prefillRows(request, share, rows);
        share -= taken;
        budget -= taken;
      }
    }
    return rows;
  }

  /** Active requests in a phase, by tenant, in the order they became active. */
  private activeByTenant(phase: Request["phase"]): Map<string, Request[]> {
    const out = new Map<string, Request[]>();
    for (const r of this.active) {
      if (r.phase !== phase) continue;
      const list = out.get(r.tenant);
      if (list) list.push(r);
      else out.set(r.tenant, [r]);
    }
    return out;
  }

  /** A decode row for a completion that is still generating; false when it has none this step. */
  private decodeRow(request: Request, c: Completion, rows: Row[]): boolean {
    if (c.stopReason) return false;
    const token = c.tokens[c.tokens.length - 1] as number;
    const slots = this.kv.appendSlots(c.id, [token]);
    if (!slots) return false; // no block this step; it waits (or is preempted)
    this.cache.copy(slots.copies);
    rows.push({
      request,
      seqId: c.id,
      token,
      position: request.prompt.length + c.tokens.length - 1,
      kvSlot: slots.slots[0] as number,
      onLogits: (logits) => this.advance(request, c, logits),
    });
    return true;
  }

  /** Up to `limit` prompt rows of a prefilling request, from where it stands; returns how many. */
  private prefillRows(request: Request, limit: number, rows: Row[]): number {
    const start = this.kv.computed(request.parentId);
    const end = Math.min(request.prompt.length, start + limit);
    const slots = this.kv.slots(request.parentId, start, end);
    for (let p = start; p < end; p++) {
      const last = p === request.prompt.length - 1;
      rows.push({
        request,
        seqId: request.parentId,
        token: request.prompt[p] as number,
        position: p,
        kvSlot: slots[p - start] as number,
        soft: request.images.length > 0 ? softTokenAt(request.images, p) : undefined,
        onLogits: last ? (logits) => this.promptDone(request, logits) : undefined,
      });
    }
    this.prefillTokens += end - start;
    return end - start;
  }

  private promptDone(request: Request, logits: Float32Array): void {
    request.firstLogits = logits;
    request.phase = "forking";
    for (const c of request.completions) this.advance(request, c, logits);
  }

  /** Samples a completion's next token from its row's logits and checks for a stop. */
  private advance(request: Request, c: Completion, logits: Float32Array): void {
    const sampled = sampleToken(logits, request.params, c.rng);
    c.tokens.push(sampled.token);
    c.logprobs.push(sampled.logprob);
    c.stopReason = request.stop(c.tokens);
    if (c.stopReason && request.phase === "decode") this.kv.free(c.id);
    if (request.phase === "decode" && request.completions.every((x) => x.stopReason)) this.finish(request);
  }

  private run(rows: Row[]): void {
    // One forward per model: the base and its adapters share one; each full-parameter version has its own.
    const groups = new Map<string, Row[]>();
    for (const row of rows) {
      const key = row.request.entry.kind === "full" ? row.request.entry.key : BASE_KEY;
      const group = groups.get(key);
      if (group) group.push(row);
      else groups.set(key, [row]);
    }
    for (const group of groups.values()) this.runGroup(group);
    for (const row of rows) {
      if (this.kv.has(row.seqId)) this.kv.commit(row.seqId, 1);
    }
  }

  private runGroup(rows: Row[]): void {
    const entry = (rows[0] as Row).request.entry;
    const full = entry.kind === "full";
    const seqIds = [...new Set(rows.map((r) => r.seqId))];
    const seqIndex = new Map(seqIds.map((id, i) => [id, i]));
    const tables = this.kv.blockTables(seqIds);
    const logitRows = rows.flatMap((r, i) => (r.onLogits ? [i] : []));
    const batch: StepBatch = {
      n: rows.length,
      tokens: Int32Array.from(rows, (r) => r.token),
      positions: Int32Array.from(rows, (r) => r.position),
      rowSeq: Int32Array.from(rows, (r) => seqIndex.get(r.seqId) as number),
      slots: Int32Array.from(rows, (r) => (r.request.entry.kind === "lora" ? r.request.entry.slot : -1)),
      slotMapping: Int32Array.from(rows, (r) => r.kvSlot),
      blockTables: tables.tables,
      numSeqs: tables.numSeqs,
      maxBlocksPerSeq: tables.maxBlocksPerSeq,
      logitRows: Int32Array.from(logitRows),
    };
    const softRows = rows.flatMap((r, i) => (r.soft ? [i] : []));
    if (softRows.length > 0) {
      const H = this.baseParams.shape.hiddenSize;
      const values = new Float32Array(softRows.length * H);
      softRows.forEach((row, i) => {
        values.set((rows[row] as Row).soft as Float32Array, i * H);
      });
      batch.softTokens = { rows: Int32Array.from(softRows), values };
    }
    const params = full ? (entry.params as ModelParams) : this.baseParams;
    const lora = full ? null : this.pool.loraTables();
    const logits = pagedForward(
      params,
      lora,
      this.cache,
      batch,
      this.options.batchInvariant === false ? "auto" : "rows",
    );
    const V = params.shape.vocabSize;
    logitRows.forEach((row, i) => {
      (rows[row] as Row).onLogits?.(logits.subarray(i * V, (i + 1) * V));
    });
  }
}
