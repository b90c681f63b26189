// The sampler's model step: one batched forward over the rows the scheduler chose.
// Prefill and decode rows of any policies mix; the base and its LoRA adapters share
// one forward (a slot per row in the multi-LoRA op), each full-parameter version
// has its own. Image positions feed soft tokens computed once per request with the
// policy's vision weights. Also the one-policy view for computeLogprobs, through
// the training forward so its numbers agree with the trainer's. Everything runs
// on the base's backend; a step sends its rows' inputs and gets back only the
// sampled tokens, their logprobs and the scored rows' results (never logits).
import type { Backend, F32, LoraAdapterBuffers } from "@opentinker/kernels";
import { Arena } from "../nn/arena.ts";
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
import { type SampledToken, sampleTokens, type TokenDraw } from "./sampling.ts";
import type { Row, ScheduledRequest } from "./scheduler.ts";

/** A prompt image with its soft tokens under the request's policy. */
export interface RequestImage extends ImageSpan {
  soft: F32; // [length, hidden], on the device until the request's arena is released
}

/** What the step reads of a request besides its rows. */
export interface StepRequest extends ScheduledRequest {
  readonly entry: PoolEntry;
  /** Empty for a text-only prompt. */
  readonly images: readonly RequestImage[];
  /** How many most likely tokens each scored prompt position reports (0: its logprob only). */
  readonly promptTopK: number;
}

/** The image and offset of prompt position `p`, when an image covers it. */
function imageAt(images: readonly RequestImage[], p: number): [RequestImage, number] | undefined {
  for (const image of images)
    if (p >= image.start && p < image.start + image.length) return [image, p - image.start];
  return undefined;
}

/** The image rows of a step and their soft tokens [m, hidden] (copied on the device), or undefined when there are none. */
function softTokensOf(
  rows: readonly Row<StepRequest>[],
  H: number,
  buffers: StepBuffers,
): StepBatch["softTokens"] {
  const soft: [number, RequestImage, number][] = [];
  rows.forEach((r, i) => {
    const { images } = r.request;
    // Images lie within the prompt, so only prompt rows can be image positions.
    const at = r.output.kind !== "decode" && images.length > 0 ? imageAt(images, r.position) : undefined;
    if (at) soft.push([i, ...at]);
  });
  if (soft.length === 0) return undefined;
  const be = buffers.be;
  const values = buffers.take("softValues", [soft.length, H]);
  soft.forEach(([, image, offset], i) => {
    be.copy(be.view(values, i * H, [H]), be.view(image.soft, offset * H, [H]));
  });
  return { rows: Int32Array.from(soft, ([row]) => row), values };
}

/**
 * Scored prompt rows from their logits [rows.length, vocab], reduced on the
 * device to the next prompt token's logprob and the most likely tokens.
 */
function score<R extends StepRequest>(
  be: Backend,
  rows: Row<R>[],
  logits: F32,
  vocab: number,
): RowScore<R>[] {
  if (rows.length === 0) return [];
  const k = Math.min(vocab, Math.max(...rows.map((r) => r.request.promptTopK)));
  const targets = be.upload(Int32Array.from(rows, (r) => r.request.prompt[r.position + 1] as number));
  const out = be.scoreRows(logits, vocab, targets, k);
  const [logprobs, topIds, topLogprobs] = [
    be.download(out.logprobs),
    be.download(out.topIds),
    be.download(out.topLogprobs),
  ];
  const scores = rows.map((row, i) => {
    const top: [number, number][] = [];
    for (let j = i * k; j < (i + 1) * k; j++) top.push([topIds[j] as number, topLogprobs[j] as number]);
    return { row, logprob: logprobs[i] as number, top };
  });
  // Read before the buffers go back: a download may share their memory.
  for (const buffer of [targets, out.logprobs, out.topIds, out.topLogprobs]) be.free(buffer);
  return scores;
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

/** What one completion of a sampling row draws with. */
export type Drawer = Pick<TokenDraw, "params" | "rng">;

/** A row that sampled, and its draws' tokens in its drawers' order. */
export interface SampledRow<R extends StepRequest> {
  row: Row<R>;
  tokens: SampledToken[];
}

/** A step's results: its sampling rows (a prompt's last row or a decode row) and its scored prompt rows. */
export interface StepResult<R extends StepRequest> {
  sampled: SampledRow<R>[];
  scores: RowScore<R>[];
}

/** A group's sampling rows, whose logits lie at rows [offset, offset + rows.length) of the step's logits. */
interface GroupRows<R extends StepRequest> {
  rows: Row<R>[];
  offset: number;
}

export class ModelStep {
  private readonly cache: PagedKv;
  private readonly buffers: StepBuffers;
  private readonly be: Backend;

  constructor(private readonly options: ModelStepOptions) {
    const { kv, baseParams } = options;
    this.be = baseParams.backend;
    this.buffers = new StepBuffers(this.be);
    this.cache = new PagedKv(this.be, baseParams.shape, kv.numBlocks, kv.blockSize);
  }

  /**
   * Runs the rows (after the copy-on-write the scheduler asked for), one forward
   * per model in turn, then draws every sampling row's tokens (`drawers` says
   * which completions draw there) in one call over the step's logits.
   */
  run<R extends StepRequest>(
    rows: readonly Row<R>[],
    copies: readonly CopyInstruction[],
    drawers: (row: Row<R>) => readonly Drawer[],
  ): StepResult<R> {
    this.cache.copy(copies);
    const groups = new Map<string, Row<R>[]>();
    for (const row of rows) {
      const key = row.request.entry.kind === "full" ? row.request.entry.key : BASE_KEY;
      const group = groups.get(key);
      if (group) group.push(row);
      else groups.set(key, [row]);
    }
    const V = this.options.baseParams.shape.vocabSize;
    const logitRows = rows.filter((r) => r.output.kind !== "none").length;
    // Every group's logit rows, one after another: sampling reads them all at once.
    const logits = this.buffers.take("logits", [logitRows, V]);
    let offset = 0;
    const scores: RowScore<R>[] = [];
    const parts: GroupRows<R>[] = [];
    for (const group of groups.values()) {
      const part = this.runGroup(group, logits, offset);
      parts.push(part.sampled);
      scores.push(...part.scores);
      offset += part.used;
    }
    const draws: TokenDraw[] = [];
    const owners: [SampledRow<R>, number][] = [];
    const sampled: SampledRow<R>[] = [];
    for (const { rows: sampling, offset: at } of parts) {
      sampling.forEach((row, i) => {
        const out: SampledRow<R> = { row, tokens: [] };
        sampled.push(out);
        for (const d of drawers(row)) {
          draws.push({ row: at + i, ...d });
          owners.push([out, draws.length - 1]);
        }
      });
    }
    const tokens = sampleTokens(this.be, this.be.view(logits, 0, [offset, V]), V, draws);
    for (const [out, i] of owners) out.tokens.push(tokens[i] as SampledToken);
    return { sampled, scores };
  }

  /**
   * Soft tokens of the prompt's images under the policy's own vision weights
   * (full-parameter ones train them), in `arena` (the request's: released when it settles).
   */
  images(entry: PoolEntry, images: readonly PreparedImage[], arena: Arena): RequestImage[] {
    if (images.length === 0) return [];
    const vision = entry.kind === "full" ? entry.params?.vision : this.options.baseParams.vision;
    if (!vision) throw new Error(`policy ${entry.key} has no vision part`);
    return images.map((image) => ({
      start: image.start,
      length: image.length,
      hash: image.hash,
      soft: softTokens(this.be, vision, image.patches, image.length, arena),
    }));
  }

  /**
   * Per-position logprobs of a sequence under one policy, through the training
   * forward: none for the first position, nor for image positions (placeholders).
   */
  logprobs(entry: PoolEntry, tokens: Int32Array, images: readonly PreparedImage[]): (number | null)[] {
    const batch = pack([{ tokens: tokens.slice(0, -1), targets: tokens.slice(1), images }]);
    const arena = new Arena(this.be);
    try {
      const out = forward(this.singlePolicyParams(entry), batch, arena).logprobs;
      const logprobs: (number | null)[] = [null, ...this.be.download(out)];
      for (const image of images) logprobs.fill(null, image.start, image.start + image.length);
      return logprobs;
    } finally {
      arena.release();
    }
  }

  /**
   * One model's rows: its logits go to rows [offset, offset + used) of `logits`,
   * sampling rows first; its scored rows are reduced here.
   */
  private runGroup<R extends StepRequest>(
    rows: Row<R>[],
    logits: F32,
    offset: number,
  ): { sampled: GroupRows<R>; scores: RowScore<R>[]; used: number } {
    const { baseParams, pool, kv, matmul } = this.options;
    const be = this.be;
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
    const H = baseParams.shape.hiddenSize;
    const softTokens = softTokensOf(rows, H, this.buffers);
    if (softTokens) batch.softTokens = softTokens;
    const params = full ? (entry.params as ModelParams) : baseParams;
    const lora = full ? null : pool.loraTables();
    const hidden = pagedForward(params, lora, this.cache, batch, matmul, this.buffers);
    // One unembedding for both kinds: each call streams the whole [vocab, hidden]
    // matrix, which dominates at a few rows (per row, blocks of 27 rows of a 152K
    // vocabulary cost twice what 256 rows at once did). Its logits, at most one row
    // per row of the step, are no more than a step of decode rows holds.
    const V = baseParams.shape.vocabSize;
    const m = logitRows.length;
    const slots = this.buffers.input(
      "logitSlots",
      Int32Array.from(logitRows, (i) => batch.slots[i] as number),
    );
    pagedLogits(params, lora, hidden, slots, be.view(logits, offset * V, [m, V]), matmul);
    const scoredLogits = be.view(logits, (offset + sampled.length) * V, [scored.length, V]);
    return {
      sampled: { rows: sampled.map((i) => rows[i] as Row<R>), offset },
      scores: score(
        be,
        scored.map((i) => rows[i] as Row<R>),
        scoredLogits,
        V,
      ),
      used: sampled.length,
    };
  }
  /** The weights of one policy as training-forward parameters. */
  private singlePolicyParams(entry: PoolEntry): ModelParams {
    const { baseParams } = this.options;
    if (entry.kind === "base") return baseParams;
    if (entry.kind === "full") return entry.params as ModelParams;
    const lora = entry.lora as LoraEntryWeights;
    const bind = (p: LinearParams, w: LoraAdapterBuffers | undefined): LinearParams => {
      if (!w) return p;
      const table = this.be.createLoraTable(p.dIn, p.dOut, [w]);
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
