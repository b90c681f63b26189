// The CPU backend: today's kernels (../ops) behind the seam, zero-copy. A CPU
// buffer wraps its typed array; the array lives in a private table, not on the
// handle, so nothing above the seam reaches it except through download (or,
// while the engine moves onto the seam, CpuBackend.host, which the strict
// backend refuses).
import { cpus, freemem, totalmem } from "node:os";
import type { AttentionHeads } from "../ops/attention.ts";
import * as attention from "../ops/attention.ts";
import type { RopeFrequencies } from "../ops/elementwise.ts";
import * as elementwise from "../ops/elementwise.ts";
import type { GemmOptions } from "../ops/gemm.ts";
import * as dense from "../ops/gemm.ts";
import * as lora from "../ops/lora.ts";
import type { UnembedTiles } from "../ops/loss.ts";
import * as loss from "../ops/loss.ts";
import * as optim from "../ops/optim.ts";
import type { SampleDraws } from "../ops/sample.ts";
import * as sample from "../ops/sample.ts";
import type {
  AdamwHyper,
  Backend,
  BlockCopy,
  DeviceInfo,
  KvCache,
  LoraAdapterBuffers,
  LoraTable,
  PackedWeight,
  PagedRowBuffers,
} from "./backend.ts";
import {
  bufferHandle,
  type DeviceBuffer,
  type DType,
  type DTypeOf,
  dtypeOf,
  elementCount,
  type F32,
  type HostArray,
  hostArray,
  type I32,
  type Weight,
} from "./buffer.ts";
import { copyKvBlocks, gatherRowsInto, referenceKlRows, scatterRowsInto, sumRowsInto } from "./cpu-loops.ts";

const arrays = new WeakMap<object, HostArray>();
const packed = new WeakMap<object, dense.PackedWeight>();
const tables = new WeakMap<object, lora.LoraTable>();

function makeBuffer<D extends DType>(
  device: string,
  data: HostArray<D>,
  shape: readonly number[],
): DeviceBuffer<D> {
  const length = elementCount(shape);
  if (length !== data.length)
    throw new RangeError(`buffer shape [${shape.join(", ")}] holds ${length} elements, not ${data.length}`);
  const buffer = bufferHandle(device, dtypeOf(data) as D, shape, length);
  arrays.set(buffer, data);
  return buffer;
}

/** Bytes of freed arrays a CPU backend keeps for reuse: a step's activations, not a model. */
const POOL_BYTES = 512 << 20;

export class CpuBackend implements Backend {
  private readonly description: string;
  /**
   * Freed arrays it allocated itself, by dtype and length, for the next alloc of
   * that size: a step's activations then reuse memory already mapped instead of
   * faulting in fresh pages (a tenth of a training step). Uploaded arrays are
   * the caller's and never pooled.
   */
  private readonly pool = new Map<string, HostArray[]>();
  private readonly owned = new WeakSet<HostArray>();
  private pooledBytes = 0;

  constructor(private readonly name = "cpu") {
    const cores = cpus();
    this.description = `${cores[0]?.model.trim() || "CPU"}, ${cores.length} cores`;
  }

  /** Host memory: free memory read now. */
  get device(): DeviceInfo {
    const { name, description } = this;
    return { name, kind: "cpu", description, totalBytes: totalmem(), freeBytes: freemem() };
  }

  /** The array behind one of this backend's buffers (the kernels' argument). */
  protected data<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    const data = arrays.get(buffer);
    const what = `a ${buffer.device} buffer [${buffer.shape.join(", ")}]`;
    if (buffer.device !== this.name) throw new TypeError(`${what} was given to the ${this.name} backend`);
    if (!data) throw new TypeError(`${what} was used after it was freed, or not made by a backend`);
    return data as HostArray<D>;
  }

  private optional(buffer: F32 | null): Float32Array | null {
    return buffer === null ? null : this.data(buffer);
  }

  /** Zero-copy host access, for CPU-only code while the engine moves onto the seam. */
  host<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    return this.data(buffer);
  }

  /** A buffer over `data` without a copy (the CPU's upload). */
  wrap<A extends HostArray>(data: A, shape: readonly number[] = [data.length]): DeviceBuffer<DTypeOf<A>> {
    return makeBuffer(this.name, data, shape) as DeviceBuffer<DTypeOf<A>>;
  }

  alloc<D extends DType>(dtype: D, shape: readonly number[]): DeviceBuffer<D> {
    const length = elementCount(shape);
    const reused = this.pool.get(`${dtype}:${length}`)?.pop() as HostArray<D> | undefined;
    if (reused) {
      this.pooledBytes -= reused.byteLength;
      reused.fill(0);
      return makeBuffer(this.name, reused, shape);
    }
    const data = hostArray(dtype, length);
    this.owned.add(data);
    return makeBuffer(this.name, data, shape);
  }

  free(buffer: DeviceBuffer): void {
    const data = this.data(buffer);
    arrays.delete(buffer);
    if (!this.owned.has(data) || this.pooledBytes + data.byteLength > POOL_BYTES) return;
    const key = `${buffer.dtype}:${data.length}`;
    const list = this.pool.get(key);
    if (list) list.push(data);
    else this.pool.set(key, [data]);
    this.pooledBytes += data.byteLength;
  }

  upload<A extends HostArray>(data: A, shape?: readonly number[]): DeviceBuffer<DTypeOf<A>> {
    return this.wrap(data, shape);
  }

  write<D extends DType>(target: DeviceBuffer<D>, data: HostArray<D>, offset = 0): void {
    const array = this.data(target);
    if (offset < 0 || offset + data.length > array.length) {
      throw new RangeError(
        `write of ${data.length} elements at ${offset} overruns a buffer of ${array.length}`,
      );
    }
    (array as Float32Array).set(data as Float32Array, offset);
  }

  download<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    return this.data(buffer);
  }

  view<D extends DType>(buffer: DeviceBuffer<D>, offset: number, shape: readonly number[]): DeviceBuffer<D> {
    const array = this.data(buffer);
    const length = elementCount(shape);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > array.length) {
      throw new RangeError(
        `view [${shape.join(", ")}] at ${offset} is outside a buffer of ${array.length} elements`,
      );
    }
    return makeBuffer(this.name, array.subarray(offset, offset + length) as HostArray<D>, shape);
  }

  copy<D extends DType>(target: DeviceBuffer<D>, source: DeviceBuffer<D>): void {
    const to = this.data(target);
    const from = this.data(source);
    if (to.length !== from.length || target.dtype !== source.dtype) {
      throw new RangeError(`copy of ${source.dtype}[${from.length}] into ${target.dtype}[${to.length}]`);
    }
    (to as Float32Array).set(from as Float32Array);
  }

  fill(buffer: DeviceBuffer<"f32" | "i32" | "f64">, value: number): void {
    this.data(buffer).fill(value);
  }

  gemm(m: number, n: number, k: number, a: F32, b: F32, c: F32, options?: GemmOptions): void {
    dense.gemm(m, n, k, this.data(a), this.data(b), this.data(c), options);
  }

  linear(
    x: F32,
    w: Weight,
    y: F32,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate = false,
    mode: "auto" | "rows" = "auto",
  ): void {
    dense.linear(this.data(x), this.data(w), this.data(y), rows, dIn, dOut, accumulate, mode);
  }

  linearBackwardInput(
    dy: F32,
    w: Weight,
    dx: F32,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate = false,
  ): void {
    dense.linearBackwardInput(this.data(dy), this.data(w), this.data(dx), rows, dIn, dOut, accumulate);
  }

  linearBackwardWeight(dy: F32, x: F32, dw: F32, rows: number, dIn: number, dOut: number): void {
    dense.linearBackwardWeight(this.data(dy), this.data(x), this.data(dw), rows, dIn, dOut);
  }

  packWeight(w: Weight, dOut: number, dIn: number): PackedWeight {
    const inner = dense.packWeight(this.data(w), dOut, dIn);
    const handle: PackedWeight = Object.freeze({ dOut, dIn });
    packed.set(handle, inner);
    return handle;
  }

  linearPacked(x: F32, w: PackedWeight, y: F32, rows: number, accumulate = false): void {
    const inner = packed.get(w);
    if (!inner) throw new TypeError("linearPacked: the weight was not packed by this backend");
    dense.linearPacked(this.data(x), inner, this.data(y), rows, accumulate);
  }

  sumRows(dy: F32, rows: number, d: number, out: F32): void {
    sumRowsInto(this.data(dy), rows, d, this.data(out));
  }

  createLoraTable(dIn: number, dOut: number, adapters: LoraAdapterBuffers[]): LoraTable {
    const inner = lora.createLoraTable(
      dIn,
      dOut,
      adapters.map((ad) => ({ a: this.data(ad.a), b: this.data(ad.b), scale: ad.scale })),
    );
    const handle: LoraTable = Object.freeze({ count: inner.count, dIn, dOut, ranks: [...inner.ranks] });
    tables.set(handle, inner);
    return handle;
  }

  private table(handle: LoraTable): lora.LoraTable {
    const inner = tables.get(handle);
    if (!inner) throw new TypeError("a LoRA table not made by this backend");
    return inner;
  }

  loraForward(x: F32, n: number, slots: I32, table: LoraTable, y: F32, rowInvariant = false): void {
    lora.loraForward(this.data(x), n, this.data(slots), this.table(table), this.data(y), rowInvariant);
  }

  loraBackward(
    x: F32,
    dy: F32,
    n: number,
    slots: I32,
    table: LoraTable,
    dx: F32 | null,
    grads: LoraTable,
  ): void {
    lora.loraBackward(
      this.data(x),
      this.data(dy),
      n,
      this.data(slots),
      this.table(table),
      this.optional(dx),
      this.table(grads),
    );
  }

  createKvCache(numBlocks: number, blockSize: number, numKvHeads: number, headDim: number): KvCache {
    const inner = attention.createPagedKvCache(numBlocks, blockSize, numKvHeads, headDim);
    const shape = [numBlocks, blockSize, numKvHeads, headDim];
    return Object.freeze({
      key: this.wrap(inner.keyCache, shape),
      value: this.wrap(inner.valueCache, shape),
      numBlocks,
      blockSize,
      numKvHeads,
      headDim,
    });
  }

  private pagedCache(cache: KvCache): attention.PagedKvCache {
    const { numBlocks, blockSize, numKvHeads, headDim } = cache;
    return {
      keyCache: this.data(cache.key),
      valueCache: this.data(cache.value),
      numBlocks,
      blockSize,
      numKvHeads,
      headDim,
    };
  }

  copyBlocks(caches: readonly KvCache[], copies: readonly BlockCopy[]): void {
    copyKvBlocks(
      caches.map((c) => this.pagedCache(c)),
      copies,
    );
  }

  cacheWrite(cache: KvCache, k: F32, v: F32, nTokens: number, slotMapping: I32): void {
    attention.cacheWrite(this.pagedCache(cache), this.data(k), this.data(v), nTokens, this.data(slotMapping));
  }

  pagedAttention(
    q: F32,
    nRows: number,
    rows: PagedRowBuffers,
    cache: KvCache,
    numHeads: number,
    scale: number,
    out: F32,
  ): void {
    const paged: attention.PagedRows = {
      rowSeq: this.data(rows.rowSeq),
      rowPos: this.data(rows.rowPos),
      blockTables: this.data(rows.blockTables),
      numSeqs: rows.numSeqs,
      maxBlocksPerSeq: rows.maxBlocksPerSeq,
    };
    attention.pagedAttention(
      this.data(q),
      nRows,
      paged,
      this.pagedCache(cache),
      numHeads,
      scale,
      this.data(out),
    );
  }

  attentionForward(
    q: F32,
    k: F32,
    v: F32,
    nTokens: number,
    seqStarts: I32,
    heads: AttentionHeads,
    out: F32,
    lse: F32,
  ): void {
    attention.attentionForward(
      this.data(q),
      this.data(k),
      this.data(v),
      nTokens,
      this.data(seqStarts),
      heads,
      this.data(out),
      this.data(lse),
    );
  }

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
  ): void {
    attention.attentionBackward(
      this.data(q),
      this.data(k),
      this.data(v),
      this.data(out),
      this.data(lse),
      this.data(dOut),
      nTokens,
      this.data(seqStarts),
      heads,
      this.data(dq),
      this.data(dk),
      this.data(dv),
    );
  }

  rmsNorm(x: F32, weight: F32, out: F32, invRms: F32 | null, n: number, d: number, eps: number): void {
    elementwise.rmsNorm(this.data(x), this.data(weight), this.data(out), this.optional(invRms), n, d, eps);
  }

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
    accumulate = false,
  ): void {
    elementwise.rmsNormBackward(
      this.data(dOut),
      this.data(x),
      this.data(weight),
      this.optional(invRms),
      this.data(dx),
      this.optional(dWeight),
      n,
      d,
      eps,
      accumulate,
    );
  }

  rope(
    x: F32,
    positions: I32,
    freqs: RopeFrequencies,
    n: number,
    heads: number,
    headDim: number,
    backward = false,
  ): void {
    const op = backward ? elementwise.ropeBackward : elementwise.rope;
    op(this.data(x), this.data(positions), freqs, n, heads, headDim);
  }

  swiglu(gate: F32, up: F32, out: F32): void {
    elementwise.swiglu(this.data(gate), this.data(up), this.data(out));
  }

  swigluBackward(dOut: F32, gate: F32, up: F32, dGate: F32, dUp: F32): void {
    elementwise.swigluBackward(
      this.data(dOut),
      this.data(gate),
      this.data(up),
      this.data(dGate),
      this.data(dUp),
    );
  }

  embedding(ids: I32, table: Weight, out: F32, n: number, vocab: number, d: number): void {
    elementwise.embedding(this.data(ids), this.data(table), this.data(out), n, vocab, d);
  }

  embeddingBackward(ids: I32, dOut: F32, dTable: F32, n: number, vocab: number, d: number): void {
    elementwise.embeddingBackward(this.data(ids), this.data(dOut), this.data(dTable), n, vocab, d);
  }

  addInPlace(target: F32, source: F32): void {
    elementwise.addInPlace(this.data(target), this.data(source));
  }

  addBias(y: F32, bias: F32, rows: number, d: number): void {
    elementwise.addBias(this.data(y), this.data(bias), rows, d);
  }

  gatherRows(source: F32, rows: I32, d: number, out: F32): void {
    gatherRowsInto(this.data(source), this.data(rows), d, this.data(out));
  }

  scatterRows(target: F32, rows: I32, d: number, source: F32): void {
    scatterRowsInto(this.data(target), this.data(rows), d, this.data(source));
  }

  logSoftmaxGather(logits: F32, targets: I32, vocab: number): { logprobs: F32; lse: F32 } {
    const out = loss.logSoftmaxGather(this.data(logits), this.data(targets), vocab);
    return { logprobs: this.wrap(out.logprobs), lse: this.wrap(out.lse) };
  }

  logSoftmaxGatherBackward(
    logits: F32,
    targets: I32,
    lse: F32,
    dLogprobs: F32,
    vocab: number,
    dLogits: F32,
  ): void {
    loss.logSoftmaxGatherBackward(
      this.data(logits),
      this.data(targets),
      this.data(lse),
      this.data(dLogprobs),
      vocab,
      this.data(dLogits),
    );
  }

  unembedLogprobs(
    hidden: F32,
    w: F32,
    targets: I32,
    d: number,
    vocab: number,
    tiles?: UnembedTiles,
  ): { logprobs: F32; lse: F32 } {
    const out = loss.unembedLogprobs(this.data(hidden), this.data(w), this.data(targets), d, vocab, tiles);
    return { logprobs: this.wrap(out.logprobs), lse: this.wrap(out.lse) };
  }

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
  ): void {
    loss.unembedLogprobsBackward(
      this.data(hidden),
      this.data(w),
      this.data(targets),
      this.data(lse),
      this.data(dLogprobs),
      this.data(dHidden),
      this.optional(dW),
      d,
      vocab,
      tiles,
    );
  }

  referenceKl(
    logits: F32,
    lse: F32,
    refLogits: F32,
    refLse: F32,
    weights: F32,
    vocab: number,
    dLogits: F32,
  ): DeviceBuffer<"f64"> {
    const rows = this.data(weights).length;
    const out = new Float64Array(rows);
    referenceKlRows(
      {
        logits: this.data(logits),
        lse: this.data(lse),
        refLogits: this.data(refLogits),
        refLse: this.data(refLse),
      },
      this.data(weights),
      vocab,
      this.data(dLogits),
      out,
    );
    return this.wrap(out);
  }

  adamwStep(param: F32, grad: F32, m: F32, v: F32, h: AdamwHyper): void {
    optim.adamwStep(
      this.data(param),
      this.data(grad),
      this.data(m),
      this.data(v),
      h.lr,
      h.beta1,
      h.beta2,
      h.eps,
      h.weightDecay,
      h.step,
      h.gradScale ?? 1,
    );
  }

  sumOfSquares(buffers: readonly F32[]): number {
    return optim.sumOfSquares(buffers.map((b) => this.data(b)));
  }

  scale(buffers: readonly F32[], factor: number): void {
    for (const buffer of buffers) {
      const data = this.data(buffer);
      for (let i = 0; i < data.length; i++) data[i] = (data[i] as number) * factor;
    }
  }

  sampleRows(logits: F32, vocab: number, draws: SampleDraws): { tokens: I32; logprobs: DeviceBuffer<"f64"> } {
    const out = sample.sampleRows(this.data(logits), vocab, draws);
    return { tokens: this.wrap(out.tokens), logprobs: this.wrap(out.logprobs) };
  }

  scoreRows(
    logits: F32,
    vocab: number,
    targets: I32,
    k: number,
  ): { logprobs: DeviceBuffer<"f64">; topIds: I32; topLogprobs: DeviceBuffer<"f64"> } {
    const out = sample.scoreRows(this.data(logits), vocab, this.data(targets), k);
    return {
      logprobs: this.wrap(out.logprobs),
      topIds: this.wrap(out.topIds),
      topLogprobs: this.wrap(out.topLogprobs),
    };
  }
}
