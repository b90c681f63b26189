// One model step over a mixed batch of token rows (chunked-prefill rows and decode
// rows of many sequences and adapters) against the paged KV cache: the serving
// counterpart of nn/transformer.ts. Adapter deltas go through the multi-LoRA op
// with a slot per row (C9).
import type { Backend, DeviceBuffer, DType, F32, I32, KvCache, LoraTable } from "@opentinker/kernels";
import type { LinearParams } from "../nn/linear.ts";
import type { ModelParams, ModelShape } from "../nn/params.ts";
import type { CopyInstruction } from "./kv-cache.ts";
import type { Module, PoolLoraTables } from "./policy-pool.ts";

export interface StepBatch {
  n: number;
  tokens: Int32Array; // [n]
  positions: Int32Array; // [n]: position of the row's token in its sequence
  rowSeq: Int32Array; // [n]: index into blockTables
  slots: Int32Array; // [n]: adapter slot in the pool's tables, -1 for none
  slotMapping: Int32Array; // [n]: KV slot the row's K/V is written to
  blockTables: Int32Array; // [numSeqs, maxBlocksPerSeq]
  numSeqs: number;
  maxBlocksPerSeq: number;
  /** Rows whose final hidden states are wanted, for their logits (last prompt rows, decode rows, scored prompt rows). */
  logitRows: Int32Array;
  /** Image rows of prompts: their input is a soft token instead of the token's embedding. */
  softTokens?: {
    rows: Int32Array; // [m]
    values: F32; // [m, hidden], on the device
  };
}

/** The K/V of every layer, in blocks of blockSize token slots. */
export class PagedKv {
  readonly layers: KvCache[];

  constructor(
    private readonly be: Backend,
    shape: ModelShape,
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    this.layers = Array.from({ length: shape.numLayers }, () =>
      be.createKvCache(numBlocks, blockSize, shape.numKvHeads, shape.headDim),
    );
  }

  static bytesPerBlock(shape: ModelShape, blockSize: number): number {
    return 2 * shape.numLayers * blockSize * shape.numKvHeads * shape.headDim * 4;
  }

  /** Copy-on-write: the first `tokens` slots of block `from` into block `to`, every layer. */
  copy(copies: readonly CopyInstruction[]): void {
    if (copies.length > 0) this.be.copyBlocks(this.layers, copies);
  }
}

/**
 * The step's activations, kept from one step to the next: a prefill step's are
 * megabytes, and fresh ones each step cost their page faults (a tenth of a
 * 512-token prefill of the 10M model). Every op that writes one overwrites it,
 * so nothing needs clearing.
 */
export class StepBuffers {
  private readonly buffers = new Map<string, DeviceBuffer>();

  constructor(readonly be: Backend) {}

  /** `shape`'s elements for `name`: the same memory step after step, grown when a step needs more. */
  take<D extends DType = "f32">(name: string, shape: number[], dtype: D = "f32" as D): DeviceBuffer<D> {
    const length = shape.reduce((a, b) => a * b, 1);
    let buffer = this.buffers.get(name) as DeviceBuffer<D> | undefined;
    if (!buffer || buffer.length < length || buffer.dtype !== dtype) {
      if (buffer) this.be.free(buffer);
      buffer = this.be.alloc(dtype, [Math.max(length, 1)]);
      this.buffers.set(name, buffer);
    }
    return this.be.view(buffer, 0, shape);
  }

  /** A step input on the device, in `name`'s buffer (one upload, no allocation once warm). */
  input(name: string, data: Int32Array): I32 {
    const buffer = this.take(name, [data.length], "i32");
    if (data.length > 0) this.be.write(buffer, data);
    return buffer;
  }
}

/**
 * "rows": each row's matmul and LoRA delta are the same whatever else is in the batch,
 * so a request's logits (and an adapter's training) do not depend on which
 * other requests shared its steps (C5); over a weight packed once
 * (`LinearParams.packed`) when there is one, with the same bits. "auto" rounds
 * differently by batch size.
 */
export type StepMatmul = "rows" | "auto";

/** A step batch's per-row inputs on the device. */
interface DeviceStep {
  n: number;
  tokens: I32;
  positions: I32;
  slots: I32;
}

function project(
  be: Backend,
  p: LinearParams,
  table: LoraTable | undefined,
  x: F32,
  b: DeviceStep,
  y: F32,
  matmul: StepMatmul,
): void {
  if (matmul === "rows" && p.packed) be.linearPacked(x, p.packed, y, b.n);
  else be.linear(x, p.weight, y, b.n, p.dIn, p.dOut, false, matmul);
  if (p.bias) be.addBias(y, p.bias, b.n, p.dOut);
  if (table && table.count > 0) be.loraForward(x, b.n, b.slots, table, y, matmul === "rows");
}

/** Runs the step and returns the final-norm hidden states of logitRows, [logitRows.length, hidden], on the device. */
export function pagedForward(
  params: ModelParams,
  lora: PoolLoraTables | null,
  kv: PagedKv,
  b: StepBatch,
  matmul: StepMatmul,
  buffers: StepBuffers,
): F32 {
  const be = params.backend;
  const {
    hiddenSize: H,
    intermediateSize: I,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: V,
    rmsNormEps: eps,
  } = params.shape;
  const n = b.n;
  const qRow = numHeads * headDim;
  const kvRow = numKvHeads * headDim;
  const step: DeviceStep = {
    n,
    tokens: buffers.input("tokens", b.tokens),
    positions: buffers.input("positions", b.positions),
    slots: buffers.input("slots", b.slots),
  };
  const slotMapping = buffers.input("slotMapping", b.slotMapping);
  const rows = {
    rowSeq: buffers.input("rowSeq", b.rowSeq),
    rowPos: step.positions,
    blockTables: buffers.input("blockTables", b.blockTables),
    numSeqs: b.numSeqs,
    maxBlocksPerSeq: b.maxBlocksPerSeq,
  };
  const h = buffers.take("h", [n, H]);
  be.embedding(step.tokens, params.embed.table, h, n, V, H);
  if (b.softTokens) be.scatterRows(h, buffers.input("softRows", b.softTokens.rows), H, b.softTokens.values);
  const xn = buffers.take("xn", [n, H]);
  const q = buffers.take("q", [n, qRow]);
  const k = buffers.take("k", [n, kvRow]);
  const v = buffers.take("v", [n, kvRow]);
  const attn = buffers.take("attn", [n, qRow]);
  const tmp = buffers.take("tmp", [n, H]);
  const gate = buffers.take("gate", [n, I]);
  const up = buffers.take("up", [n, I]);
  params.layers.forEach((layer, l) => {
    const t = lora?.layers[l] as Record<Module, LoraTable> | undefined;
    const cache = kv.layers[l] as KvCache;
    be.rmsNorm(h, layer.inputNorm.weight, xn, null, n, H, eps);
    project(be, layer.q, t?.q, xn, step, q, matmul);
    project(be, layer.k, t?.k, xn, step, k, matmul);
    project(be, layer.v, t?.v, xn, step, v, matmul);
    be.rope(q, step.positions, params.rope, n, numHeads, headDim);
    be.rope(k, step.positions, params.rope, n, numKvHeads, headDim);
    be.cacheWrite(cache, k, v, n, slotMapping);
    be.pagedAttention(q, n, rows, cache, numHeads, 1 / Math.sqrt(headDim), attn);
    project(be, layer.o, t?.o, attn, step, tmp, matmul);
    be.addInPlace(h, tmp);
    be.rmsNorm(h, layer.postAttentionNorm.weight, xn, null, n, H, eps);
    project(be, layer.gate, t?.gate, xn, step, gate, matmul);
    project(be, layer.up, t?.up, xn, step, up, matmul);
    be.swiglu(gate, up, gate);
    project(be, layer.down, t?.down, gate, step, tmp, matmul);
    be.addInPlace(h, tmp);
  });
  // Only the rows that want logits go on.
  const m = b.logitRows.length;
  const last = buffers.take("last", [m, H]);
  be.gatherRows(h, buffers.input("logitRows", b.logitRows), H, last);
  const normed = buffers.take("normed", [m, H]);
  be.rmsNorm(last, params.finalNorm.weight, normed, null, m, H, eps);
  return normed;
}

/**
 * Logits [m, vocab] of final hidden states [m, hidden], each row's unembedding
 * delta from its own adapter slot (-1: none), into `logits`.
 */
export function pagedLogits(
  params: ModelParams,
  lora: PoolLoraTables | null,
  hidden: F32,
  slots: I32,
  logits: F32,
  matmul: StepMatmul = "rows",
): void {
  const be = params.backend;
  const { hiddenSize: H, vocabSize: V } = params.shape;
  const m = slots.length;
  const { packed } = params.unembed;
  if (matmul === "rows" && packed) be.linearPacked(hidden, packed, logits, m);
  else be.linear(hidden, params.unembed.weight, logits, m, H, V, false, matmul);
  if (lora?.unembed && m > 0) be.loraForward(hidden, m, slots, lora.unembed, logits, matmul === "rows");
}
