// One model step over a mixed batch of token rows (chunked-prefill rows and decode
// rows of many sequences and adapters) against the paged KV cache: the serving
// counterpart of nn/transformer.ts. Adapter deltas go through the multi-LoRA op
// with a slot per row (C9).
import {
  addBias,
  addInPlace,
  cacheWrite,
  copyKvBlocks,
  createPagedKvCache,
  embedding,
  gatherRowsInto,
  type LoraTable,
  linear,
  linearPacked,
  loraForward,
  type PagedKvCache,
  pagedAttention,
  rmsNorm,
  rope,
  scatterRowsInto,
  swiglu,
} from "@opentinker/kernels";
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
    values: Float32Array; // [m, hidden]
  };
}

/** The K/V of every layer, in blocks of blockSize token slots. */
export class PagedKv {
  readonly layers: PagedKvCache[];

  constructor(
    shape: ModelShape,
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    this.layers = Array.from({ length: shape.numLayers }, () =>
      createPagedKvCache(numBlocks, blockSize, shape.numKvHeads, shape.headDim),
    );
  }

  static bytesPerBlock(shape: ModelShape, blockSize: number): number {
    return 2 * shape.numLayers * blockSize * shape.numKvHeads * shape.headDim * 4;
  }

  /** Copy-on-write: the first `tokens` slots of block `from` into block `to`, every layer. */
  copy(copies: readonly CopyInstruction[]): void {
    copyKvBlocks(this.layers, copies);
  }
}

/**
 * The step's activations, kept from one step to the next: a prefill step's are
 * megabytes, and fresh ones each step cost their page faults (a tenth of a
 * 512-token prefill of the 10M model). Every op that writes one overwrites it,
 * so nothing needs clearing.
 */
export class StepBuffers {
  private readonly arrays = new Map<string, Float32Array>();

  /** `length` floats for `name`: the same memory step after step, grown when a step needs more. */
  take(name: string, length: number): Float32Array {
    let array = this.arrays.get(name);
    if (!array || array.length < length) {
      array = new Float32Array(length);
      this.arrays.set(name, array);
    }
    return array.subarray(0, length);
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

function project(
  p: LinearParams,
  table: LoraTable | undefined,
  x: Float32Array,
  b: StepBatch,
  y: Float32Array,
  matmul: StepMatmul,
): void {
  if (matmul === "rows" && p.packed) linearPacked(x, p.packed, y, b.n);
  else linear(x, p.weight, y, b.n, p.dIn, p.dOut, false, matmul);
  if (p.bias) addBias(y, p.bias, b.n, p.dOut);
  if (table && table.count > 0) loraForward(x, b.n, b.slots, table, y, matmul === "rows");
}

/** Runs the step and returns the final-norm hidden states of logitRows, [logitRows.length, hidden]. */
export function pagedForward(
  params: ModelParams,
  lora: PoolLoraTables | null,
  kv: PagedKv,
  b: StepBatch,
  matmul: StepMatmul,
  buffers: StepBuffers,
): Float32Array {
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
  const h = buffers.take("h", n * H);
  embedding(b.tokens, params.embed.table, h, n, V, H);
  if (b.softTokens) {
    scatterRowsInto(h, b.softTokens.rows, H, b.softTokens.values);
  }
  const xn = buffers.take("xn", n * H);
  const q = buffers.take("q", n * qRow);
  const k = buffers.take("k", n * kvRow);
  const v = buffers.take("v", n * kvRow);
  const attn = buffers.take("attn", n * qRow);
  const tmp = buffers.take("tmp", n * H);
  const gate = buffers.take("gate", n * I);
  const up = buffers.take("up", n * I);
  const rows = {
    rowSeq: b.rowSeq,
    rowPos: b.positions,
    blockTables: b.blockTables,
    numSeqs: b.numSeqs,
    maxBlocksPerSeq: b.maxBlocksPerSeq,
  };
  params.layers.forEach((layer, l) => {
    const t = lora?.layers[l] as Record<Module, LoraTable> | undefined;
    const cache = kv.layers[l] as PagedKvCache;
    rmsNorm(h, layer.inputNorm.weight, xn, null, n, H, eps);
    project(layer.q, t?.q, xn, b, q, matmul);
    project(layer.k, t?.k, xn, b, k, matmul);
    project(layer.v, t?.v, xn, b, v, matmul);
    rope(q, b.positions, params.rope, n, numHeads, headDim);
    rope(k, b.positions, params.rope, n, numKvHeads, headDim);
    cacheWrite(cache, k, v, n, b.slotMapping);
    pagedAttention(q, n, rows, cache, numHeads, 1 / Math.sqrt(headDim), attn);
    project(layer.o, t?.o, attn, b, tmp, matmul);
    addInPlace(h, tmp);
    rmsNorm(h, layer.postAttentionNorm.weight, xn, null, n, H, eps);
    project(layer.gate, t?.gate, xn, b, gate, matmul);
    project(layer.up, t?.up, xn, b, up, matmul);
    swiglu(gate, up, gate);
    project(layer.down, t?.down, gate, b, tmp, matmul);
    addInPlace(h, tmp);
  });
  // Only the rows that want logits go on.
  const m = b.logitRows.length;
  const last = new Float32Array(m * H);
  gatherRowsInto(h, b.logitRows, H, last);
  const normed = new Float32Array(m * H);
  rmsNorm(last, params.finalNorm.weight, normed, null, m, H, eps);
  return normed;
}

/**
 * Logits [m, vocab] of final hidden states [m, hidden], each row's unembedding
 * delta from its own adapter slot (-1: none).
 */
export function pagedLogits(
  params: ModelParams,
  lora: PoolLoraTables | null,
  hidden: Float32Array,
  slots: Int32Array,
  matmul: StepMatmul = "rows",
): Float32Array {
  const { hiddenSize: H, vocabSize: V } = params.shape;
  const m = slots.length;
  const logits = new Float32Array(m * V);
  const { packed } = params.unembed;
  if (matmul === "rows" && packed) linearPacked(hidden, packed, logits, m);
  else linear(hidden, params.unembed.weight, logits, m, H, V, false, matmul);
  if (lora?.unembed && m > 0) loraForward(hidden, m, slots, lora.unembed, logits, matmul === "rows");
  return logits;
}
