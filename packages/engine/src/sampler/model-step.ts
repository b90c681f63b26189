// The sampler's model step: one batched forward over the rows the scheduler chose.
// Prefill and decode rows of any policies mix; the base and its LoRA adapters share
// one forward (a slot per row in the multi-LoRA op), each full-parameter version
// has its own. Image positions feed soft tokens computed once per request with the
// policy's vision weights. Also the one-policy view for computeLogprobs, through
// the training forward so its numbers agree with the trainer's.
import { createLoraTable, type LoraAdapterWeights, scoreRows } from "@opentinker/kernels";
import type { LinearParams } from "../nn/linear.ts";
import type { ModelParams } from "../nn/params.ts";
import { forward } from "../nn/transformer.ts";
import { softTokens } from "../nn/vision.ts";
import { pack } from "../trainer/batching.ts";
import type { PreparedImage } from "../vision/input.ts";
import type { ImageSpan } from "./block-hash.ts";
import type { CopyInstruction, KvCacheManager } from "./kv-cache.ts";
import {
  PagedKv,
  pagedForward,
  pagedLogits,
  type StepBatch,
  StepBuffers,
  type StepMatmul,
} from "./paged-model.ts";
import { BASE_KEY, type LoraEntryWeights, MODULES, type PolicyPool, type PoolEntry } from "./policy-pool.ts";
import type { Row, ScheduledRequest } from "./scheduler.ts";

/** A prompt image with its soft tokens under the request's policy. */
export interface RequestImage extends ImageSpan {
  soft: Float32Array; // [length, hidden]
}

/** What the step reads of a request besides its rows. */
export interface StepRequest extends ScheduledRequest {
  readonly entry: PoolEntry;
  /** Empty for a text-only prompt. */
  readonly images: readonly RequestImage[];
  /** How many most likely tokens each scored prompt position reports (0: its logprob only). */
  readonly promptTopK: number;
}

/** The soft token [hidden] fed at prompt position `p`, when an image covers it. */
function softTokenAt(images: readonly RequestImage[], p: number): Float32Array | undefined {
  for (const image of images) {
    if (p < image.start || p >= image.start + image.length) continue;
    const H = image.soft.length / image.length;
    return image.soft.subarray((p - image.start) * H, (p - image.start + 1) * H);
  }
  return undefined;
}

/** The image rows of a step and their soft tokens [m, hidden], or undefined when there are none. */
function softTokensOf(rows: readonly Row<StepRequest>[], H: number): StepBatch["softTokens"] {
  const soft: [number, Float32Array][] = [];
  rows.forEach((r, i) => {
    const { images } = r.request;
    // Images lie within the prompt, so only prompt rows can be image positions.
    const token =
      r.output.kind !== "decode" && images.length > 0 ? softTokenAt(images, r.position) : undefined;
    if (token) soft.push([i, token]);
  });
  if (soft.length === 0) return undefined;
  const values = new Float32Array(soft.length * H);
  soft.forEach(([, token], i) => {
    values.set(token, i * H);
  });
  return { rows: Int32Array.from(soft, ([row]) => row), values };
}

/**
 * Scored prompt rows from their logits [rows.length, vocab], reduced natively to
 * the next prompt token's logprob and the most likely tokens (partial selection).
 */
function score<R extends StepRequest>(rows: Row<R>[], logits: Float32Array, vocab: number): RowScore<R>[] {
  if (rows.length === 0) return [];
  const k = Math.min(vocab, Math.max(...rows.map((r) => r.request.promptTopK)));
  const targets = Int32Array.from(rows, (r) => r.request.prompt[r.position + 1] as number);
  const s = scoreRows(logits, vocab, targets, k);
  return rows.map((row, i) => {
    const top: [number, number][] = [];
    for (let j = i * k; j < (i + 1) * k; j++) top.push([s.topIds[j] as number, s.topLogprobs[j] as number]);
    return { row, logprob: s.logprobs[i] as number, top };
  });
}

export interface ModelStepOptions {
  baseParams: ModelParams;
  pool: PolicyPool;
  kv: KvCacheManager;
  matmul: StepMatmul;
}

/**
 * A scored prompt row (see RowOutput "score"): log π(next prompt token) and the
 * most likely next tokens, [tokenId, logprob], most likely first: at least the
 * request's promptTopK of them (as many as the most any request of its step asked for).
 */
export interface RowScore<R extends StepRequest> {
  row: Row<R>;
  logprob: number;
  top: [number, number][];
}

/**
 * A step's logits: [rows.length, vocab], one row per row that samples (a prompt's
 * last row or a decode row), in `rows` order; and the scores of its scored prompt rows.
 */
export interface StepLogits<R extends StepRequest> {
  rows: Row<R>[];
  logits: Float32Array;
  vocab: number;
  scores: RowScore<R>[];
}

export class ModelStep {
  private readonly cache: PagedKv;
  private readonly buffers = new StepBuffers();

  constructor(private readonly options: ModelStepOptions) {
    const { kv, baseParams } = options;
    this.cache = new PagedKv(baseParams.shape, kv.numBlocks, kv.blockSize);
  }

  /**
   * Runs the rows (after the copy-on-write the scheduler asked for), one forward
   * per model in turn, and returns the logits of the rows that want them, so the
   * whole step is sampled at once.
   */
  run<R extends StepRequest>(rows: readonly Row<R>[], copies: readonly CopyInstruction[]): StepLogits<R> {
    this.cache.copy(copies);
    const groups = new Map<string, Row<R>[]>();
    for (const row of rows) {
      const key = row.request.entry.kind === "full" ? row.request.entry.key : BASE_KEY;
      const group = groups.get(key);
      if (group) group.push(row);
      else groups.set(key, [row]);
    }
    const vocab = this.options.baseParams.shape.vocabSize;
    const parts = [...groups.values()].map((group) => this.runGroup(group));
    const scores = parts.flatMap((p) => p.scores);
    const [only] = parts;
    if (only && parts.length === 1) return { ...only, vocab };
    // Full-parameter policies run their own forwards: their logits join one buffer.
    const out: Row<R>[] = parts.flatMap((p) => p.rows);
    const logits = new Float32Array(out.length * vocab);
    let offset = 0;
    for (const part of parts) {
      logits.set(part.logits, offset);
      offset += part.logits.length;
    }
    return { rows: out, logits, vocab, scores };
  }

  /** Soft tokens of the prompt's images under the policy's own vision weights (full-parameter ones train them). */
  images(entry: PoolEntry, images: readonly PreparedImage[]): RequestImage[] {
    if (images.length === 0) return [];
    const vision = entry.kind === "full" ? entry.params?.vision : this.options.baseParams.vision;
    if (!vision) throw new Error(`policy ${entry.key} has no vision part`);
    return images.map((image) => ({
      start: image.start,
      length: image.length,
      hash: image.hash,
      soft: softTokens(vision, image.patches, image.length),
    }));
  }

  /**
   * Per-position logprobs of a sequence under one policy, through the training
   * forward: none for the first position, nor for image positions (placeholders).
   */
  logprobs(entry: PoolEntry, tokens: Int32Array, images: readonly PreparedImage[]): (number | null)[] {
    const batch = pack([{ tokens: tokens.slice(0, -1), targets: tokens.slice(1), images }]);
    const logprobs: (number | null)[] = [null, ...forward(this.singlePolicyParams(entry), batch).logprobs];
    for (const image of images) logprobs.fill(null, image.start, image.start + image.length);
    return logprobs;
  }

  private runGroup<R extends StepRequest>(rows: Row<R>[]): Omit<StepLogits<R>, "vocab"> {
    const { baseParams, pool, kv, matmul } = this.options;
    const entry = (rows[0] as Row<R>).request.entry;
    const full = entry.kind === "full";
    const seqIds = [...new Set(rows.map((r) => r.seqId))];
    const seqIndex = new Map(seqIds.map((id, i) => [id, i]));
    const tables = kv.blockTables(seqIds);
    // Rows that sample first, then scored prompt rows: their hidden states come back in that order.
    const sampled = rows.flatMap((r, i) =>
      r.output.kind === "prompt" || r.output.kind === "decode" ? [i] : [],
    );
    const scored = rows.flatMap((r, i) => (r.output.kind === "score" ? [i] : []));
    const logitRows = [...sampled, ...scored];
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
    const softTokens = softTokensOf(rows, baseParams.shape.hiddenSize);
    if (softTokens) batch.softTokens = softTokens;
    const params = full ? (entry.params as ModelParams) : baseParams;
    const lora = full ? null : pool.loraTables();
    const hidden = pagedForward(params, lora, this.cache, batch, matmul, this.buffers);
    // One unembedding for both kinds: each call streams the whole [vocab, hidden]
    // matrix, which dominates at a few rows (per row, blocks of 27 rows of a 152K
    // vocabulary cost twice what 256 rows at once did). Its logits, at most one row
    // per row of the step, are no more than a step of decode rows holds.
    const logits = pagedLogits(
      params,
      lora,
      hidden,
      Int32Array.from(logitRows, (i) => batch.slots[i] as number),
      matmul,
    );
    const V = baseParams.shape.vocabSize;
    const split = sampled.length * V;
    return {
      rows: sampled.map((i) => rows[i] as Row<R>),
      logits: logits.subarray(0, split),
      scores: score(
        scored.map((i) => rows[i] as Row<R>),
        logits.subarray(split),
        V,
      ),
    };
  }

  /** The weights of one policy as training-forward parameters. */
  private singlePolicyParams(entry: PoolEntry): ModelParams {
    const { baseParams } = this.options;
    if (entry.kind === "base") return baseParams;
    if (entry.kind === "full") return entry.params as ModelParams;
    const lora = entry.lora as LoraEntryWeights;
    const bind = (p: LinearParams, w: LoraAdapterWeights | undefined): LinearParams => {
      if (!w) return p;
      const table = createLoraTable(p.dIn, p.dOut, [w]);
      return { ...p, lora: { table, grads: table } };
    };
    const layers = baseParams.layers.map((layer, l) => {
      const out = { ...layer };
      for (const m of MODULES) out[m] = bind(layer[m], lora.layers[l]?.[m]);
      return out;
    });
    const { hiddenSize, vocabSize } = baseParams.shape;
    const unembed = lora.unembed
      ? {
          ...baseParams.unembed,
          lora: bind({ dIn: hiddenSize, dOut: vocabSize, weight: baseParams.unembed.weight }, lora.unembed)
            .lora,
        }
      : baseParams.unembed;
    return { ...baseParams, layers, unembed };
  }
}
