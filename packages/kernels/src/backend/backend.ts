// The device seam (issue 45): one interface for everything the engine computes,
// over buffers that live on the backend's device. The CPU backend (cpu.ts) is
// today's kernels behind it; a CUDA backend is a new folder beside it.
import type { AttentionHeads } from "../ops/attention.ts";
import type { RopeFrequencies } from "../ops/elementwise.ts";
import type { GemmOptions } from "../ops/gemm.ts";
import type { UnembedTiles } from "../ops/loss.ts";
import type { SampleDraws } from "../ops/sample.ts";
import type { DeviceBuffer, DType, DTypeOf, F32, HostArray, I32, Weight } from "./buffer.ts";

/** What a backend runs on, and its memory now. */
export interface DeviceInfo {
  /** "cpu", "cuda:0", …: the name buffers carry. */
  name: string;
  kind: "cpu" | "cuda";
  /** What the device is, in words ("AMD EPYC 9654, avx512", "NVIDIA H100 80GB HBM3"). */
  description: string;
  totalBytes: number;
  freeBytes: number;
}

/** A frozen weight [dOut, dIn] packed once for linearPacked, in the backend's own layout. */
export interface PackedWeight {
  readonly dOut: number;
  readonly dIn: number;
}

/** Several adapters' A and B of one projection, built once for any number of calls. */
export interface LoraTable {
  readonly count: number;
  readonly dIn: number;
  readonly dOut: number;
  readonly ranks: number[];
}

export interface LoraAdapterBuffers {
  a: F32; // [rank, dIn]
  b: F32; // [dOut, rank]
  scale: number;
}

/** A paged KV cache: key and value blocks [numBlocks, blockSize, numKvHeads, headDim]. */
export interface KvCache {
  readonly key: F32;
  readonly value: F32;
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/** Copy-on-write of a shared block: its first `tokens` slots, every layer's cache. */
export interface BlockCopy {
  from: number;
  to: number;
  tokens: number;
}

/** Which sequence and position each row of a paged-attention batch is, and the block tables. */
export interface PagedRowBuffers {
  rowSeq: I32; // [nRows]
  rowPos: I32; // [nRows]
  blockTables: I32; // [numSeqs, maxBlocksPerSeq]
  numSeqs: number;
  maxBlocksPerSeq: number;
}

export interface AdamwHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** 1-based step, for the bias corrections. */
  step: number;
  /** Multiplies the gradient first (clipping, averaging). */
  gradScale?: number;
}

/**
 * Every operation the engine runs, over the backend's buffers. Shapes and
 * semantics are those of the same-named free functions in ../ops (each says its
 * shapes); a backend gives the same numbers as the CPU's within its dtype's
 * rounding. A buffer handed to a backend must be one of its own.
 */
export interface Backend {
  readonly device: DeviceInfo;

  // Memory.
  /** A zero-filled buffer. */
  alloc<D extends DType>(dtype: D, shape: readonly number[]): DeviceBuffer<D>;
  /** Gives a buffer's memory back; the buffer must not be used again (views of it neither). */
  free(buffer: DeviceBuffer): void;
  /** A buffer holding `data`, shaped `shape` (default: flat). The caller must not change `data` afterwards. */
  upload<A extends HostArray>(data: A, shape?: readonly number[]): DeviceBuffer<DTypeOf<A>>;
  /** Host → an existing buffer, at an element offset. */
  write<D extends DType>(target: DeviceBuffer<D>, data: HostArray<D>, offset?: number): void;
  /** The buffer's elements on the host: the only way out. Read it; don't write it (it may share memory). */
  download<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D>;
  /** `shape`'s elements of `buffer` from element `offset`, sharing its memory. */
  view<D extends DType>(buffer: DeviceBuffer<D>, offset: number, shape: readonly number[]): DeviceBuffer<D>;
  /** target ← source (same dtype and length). */
  copy<D extends DType>(target: DeviceBuffer<D>, source: DeviceBuffer<D>): void;
  fill(buffer: DeviceBuffer<"f32" | "i32" | "f64">, value: number): void;

  // Dense products.
  gemm(m: number, n: number, k: number, a: F32, b: F32, c: F32, options?: GemmOptions): void;
  linear(
    x: F32,
    w: Weight,
    y: F32,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate?: boolean,
    mode?: "auto" | "rows",
  ): void;
  linearBackwardInput(
    dy: F32,
    w: Weight,
    dx: F32,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate?: boolean,
  ): void;
  linearBackwardWeight(dy: F32, x: F32, dw: F32, rows: number, dIn: number, dOut: number): void;
  packWeight(w: Weight, dOut: number, dIn: number): PackedWeight;
  linearPacked(x: F32, w: PackedWeight, y: F32, rows: number, accumulate?: boolean): void;
  /** The bias gradient: out[d] += Σ over rows of dy[row, d]. */
  sumRows(dy: F32, rows: number, d: number, out: F32): void;

  // Multi-LoRA.
  createLoraTable(dIn: number, dOut: number, adapters: LoraAdapterBuffers[]): LoraTable;
  loraForward(x: F32, n: number, slots: I32, table: LoraTable, y: F32, rowInvariant?: boolean): void;
  loraBackward(
    x: F32,
    dy: F32,
    n: number,
    slots: I32,
    table: LoraTable,
    dx: F32 | null,
    grads: LoraTable,
  ): void;

  // Attention and the paged KV cache.
  createKvCache(numBlocks: number, blockSize: number, numKvHeads: number, headDim: number): KvCache;
  copyBlocks(caches: readonly KvCache[], copies: readonly BlockCopy[]): void;
  cacheWrite(cache: KvCache, k: F32, v: F32, nTokens: number, slotMapping: I32): void;
  pagedAttention(
    q: F32,
    nRows: number,
    rows: PagedRowBuffers,
    cache: KvCache,
    numHeads: number,
    scale: number,
    out: F32,
  ): void;
  attentionForward(
    q: F32,
    k: F32,
    v: F32,
    nTokens: number,
    seqStarts: I32,
    heads: AttentionHeads,
    out: F32,
    lse: F32,
  ): void;
  attentionBackward(
    q: F32,
    k: F32,
    v: F32,
    out: F32,
    lse: F32,
    dOut: F32,
    nTokens: number,
    seqStarts: I32,
    heads: AttentionHeads,
    dq: F32,
    dk: F32,
    dv: F32,
  ): void;

  // Norms, RoPE, activations, embedding, row moves.
  rmsNorm(x: F32, weight: F32, out: F32, invRms: F32 | null, n: number, d: number, eps: number): void;
  rmsNormBackward(
    dOut: F32,
    x: F32,
    weight: F32,
    invRms: F32 | null,
    dx: F32,
    dWeight: F32 | null,
    n: number,
    d: number,
    eps: number,
    accumulate?: boolean,
  ): void;
  rope(
    x: F32,
    positions: I32,
    freqs: RopeFrequencies,
    n: number,
    heads: number,
    headDim: number,
    backward?: boolean,
  ): void;
  swiglu(gate: F32, up: F32, out: F32): void;
  swigluBackward(dOut: F32, gate: F32, up: F32, dGate: F32, dUp: F32): void;
  embedding(ids: I32, table: Weight, out: F32, n: number, vocab: number, d: number): void;
  embeddingBackward(ids: I32, dOut: F32, dTable: F32, n: number, vocab: number, d: number): void;
  addInPlace(target: F32, source: F32): void;
  addBias(y: F32, bias: F32, rows: number, d: number): void;
  /** out[i] = source[rows[i]] for rows of width d (the logit rows of a batch). */
  gatherRows(source: F32, rows: I32, d: number, out: F32): void;
  /** target[rows[i]] = source[i] for rows of width d (soft tokens over their placeholders). */
  scatterRows(target: F32, rows: I32, d: number, source: F32): void;

  // Losses, with per-token outputs.
  logSoftmaxGather(logits: F32, targets: I32, vocab: number): { logprobs: F32; lse: F32 };
  logSoftmaxGatherBackward(
    logits: F32,
    targets: I32,
    lse: F32,
    dLogprobs: F32,
    vocab: number,
    dLogits: F32,
  ): void;
  unembedLogprobs(
    hidden: F32,
    w: F32,
    targets: I32,
    d: number,
    vocab: number,
    tiles?: UnembedTiles,
  ): { logprobs: F32; lse: F32 };
  unembedLogprobsBackward(
    hidden: F32,
    w: F32,
    targets: I32,
    lse: F32,
    dLogprobs: F32,
    dHidden: F32,
    dW: F32 | null,
    d: number,
    vocab: number,
    tiles?: UnembedTiles,
  ): void;
  /**
   * The reference KL of rows [rows, vocab]: for each row r of weight w_r ≠ 0,
   * KL(q‖p) with p = softmax(logits), q = softmax(refLogits), computed in f64;
   * adds w_r · (p − q) to dLogits and returns w_r · KL per row (f64).
   */
  referenceKl(
    logits: F32,
    lse: F32,
    refLogits: F32,
    refLse: F32,
    weights: F32,
    vocab: number,
    dLogits: F32,
  ): DeviceBuffer<"f64">;

  // The optimizer.
  adamwStep(param: F32, grad: F32, m: F32, v: F32, hyper: AdamwHyper): void;
  /** Σ x² over every buffer, in f64 (one scalar read back: the gradient norm is a metric). */
  sumOfSquares(buffers: readonly F32[]): number;
  /** Multiplies every element of every buffer by factor (gradient clipping). */
  scale(buffers: readonly F32[], factor: number): void;

  // Sampling, on the device: only tokens and logprobs come back.
  sampleRows(logits: F32, vocab: number, draws: SampleDraws): { tokens: I32; logprobs: DeviceBuffer<"f64"> };
  scoreRows(
    logits: F32,
    vocab: number,
    targets: I32,
    k: number,
  ): { logprobs: DeviceBuffer<"f64">; topIds: I32; topLogprobs: DeviceBuffer<"f64"> };
}
