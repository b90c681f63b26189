// The CUDA backend (issue 47): the seam's Backend over a CUDA device of the
// addons (device.ts), every op one or a few launches of cuda/kernels/*.cu. Host
// values an op needs (RoPE frequencies, sampling settings, block copies) are
// uploaded for the call; only download brings anything back. The same class
// runs on a GPU and, in tests, on the emulated device.
import type { AttentionHeads } from "../../ops/attention.ts";
import type { RopeFrequencies } from "../../ops/elementwise.ts";
import type { GemmOptions } from "../../ops/gemm.ts";
import type { UnembedTiles } from "../../ops/loss.ts";
import type { SampleDraws } from "../../ops/sample.ts";
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
} from "../backend.ts";
import {
  bytesPerElement,
  type DeviceBuffer,
  type DType,
  type DTypeOf,
  dtypeOf,
  type F32,
  type HostArray,
  hostArray,
  type I32,
  type Weight,
} from "../buffer.ts";
import { DeviceBuffers } from "./buffers.ts";
import type { CudaDeviceHandle, LaunchArg } from "./device.ts";
import { LoraTables } from "./lora-tables.ts";

/** The most top logprobs score_rows_f32 keeps per row. */
const MAX_SCORE_K = 32;

export class CudaBackend implements Backend {
  private readonly buffers: DeviceBuffers;
  private readonly lora: LoraTables;
  private readonly packed = new WeakMap<object, Weight>();
  private readonly frequencies = new WeakMap<RopeFrequencies, F32>();

  constructor(
    private readonly dev: CudaDeviceHandle,
    private readonly kind: "cuda" | "cuda-emulated" = "cuda",
  ) {
    this.buffers = new DeviceBuffers(dev, dev.name);
    this.lora = new LoraTables(dev, this.buffers);
  }

  get device(): DeviceInfo {
    const { freeBytes, totalBytes } = this.dev.memInfo();
    return { name: this.dev.name, kind: "cuda", description: this.dev.description, totalBytes, freeBytes };
  }

  /** "cuda" on a GPU, "cuda-emulated" on the CPU execution of the kernels. */
  get deviceKind(): "cuda" | "cuda-emulated" {
    return this.kind;
  }

  private a(buffer: DeviceBuffer): bigint {
    return this.buffers.address(buffer);
  }

  private launch(name: string, ...args: LaunchArg[]): void {
    this.dev.launch(name, ...args);
  }

  /** A scratch buffer for the length of fn, not zeroed: every use writes it before reading. */
  private scratch<D extends DType, T>(dtype: D, length: number, fn: (buffer: DeviceBuffer<D>) => T): T {
    const buffer = this.buffers.alloc(dtype, [length], false);
    try {
      return fn(buffer);
    } finally {
      this.free(buffer);
    }
  }

  /** Host values uploaded for the length of fn. */
  private staged<A extends HostArray, T>(data: A, fn: (buffer: DeviceBuffer<DTypeOf<A>>) => T): T {
    const buffer = this.upload(data);
    try {
      return fn(buffer);
    } finally {
      this.free(buffer);
    }
  }

  // Memory.

  alloc<D extends DType>(dtype: D, shape: readonly number[]): DeviceBuffer<D> {
    return this.buffers.alloc(dtype, shape);
  }

  free(buffer: DeviceBuffer): void {
    this.buffers.free(buffer);
  }

  upload<A extends HostArray>(data: A, shape: readonly number[] = [data.length]): DeviceBuffer<DTypeOf<A>> {
    const buffer = this.alloc(dtypeOf(data) as DTypeOf<A>, shape);
    if (buffer.length !== data.length) {
      this.free(buffer);
      throw new RangeError(
        `buffer shape [${shape.join(", ")}] holds ${buffer.length} elements, not ${data.length}`,
      );
    }
    if (data.length > 0) this.dev.upload(this.a(buffer), data);
    return buffer;
  }

  write<D extends DType>(target: DeviceBuffer<D>, data: HostArray<D>, offset = 0): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + data.length > target.length) {
      throw new RangeError(
        `write of ${data.length} elements at ${offset} overruns a buffer of ${target.length}`,
      );
    }
    if (data.length === 0) return;
    this.dev.upload(this.a(target) + BigInt(offset * bytesPerElement(target.dtype)), data);
  }

  download<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    const out = hostArray(buffer.dtype, buffer.length);
    if (buffer.length === 0) return out;
    const bytes = this.dev.download(this.a(buffer), out.byteLength);
    new Uint8Array(out.buffer).set(new Uint8Array(bytes));
    return out;
  }

  view<D extends DType>(buffer: DeviceBuffer<D>, offset: number, shape: readonly number[]): DeviceBuffer<D> {
    return this.buffers.view(buffer, offset, shape);
  }

  copy<D extends DType>(target: DeviceBuffer<D>, source: DeviceBuffer<D>): void {
    if (target.length !== source.length || target.dtype !== source.dtype) {
      throw new RangeError(
        `copy of ${source.dtype}[${source.length}] into ${target.dtype}[${target.length}]`,
      );
    }
    this.dev.copy(this.a(target), this.a(source), target.length * bytesPerElement(target.dtype));
  }

  fill(buffer: DeviceBuffer<"f32" | "i32" | "f64">, value: number): void {
    this.launch(`fill_${buffer.dtype}`, this.a(buffer), buffer.length, value);
  }

  // Dense products. f32 weights on CUDA cores; bf16 weights on tensor cores,
  // the activations split into two bf16 halves (bf16Product), f32 accumulation.

  gemm(m: number, n: number, k: number, a: F32, b: F32, c: F32, options: GemmOptions = {}): void {
    const { transA = false, transB = false, alpha = 1, beta = 0 } = options;
    if (alpha !== 1 || (beta !== 0 && beta !== 1)) {
      throw new RangeError(`gemm on CUDA takes alpha 1 and beta 0 or 1 (got alpha ${alpha}, beta ${beta})`);
    }
    const accumulate = beta === 1 ? 1 : 0;
    if (!transA && transB) this.launch("gemm_f32_xwt", this.a(a), this.a(b), this.a(c), m, n, k, accumulate);
    else if (!transA && !transB)
      this.launch("gemm_f32_backward_input", this.a(a), this.a(b), this.a(c), m, k, n, accumulate);
    else if (transA && !transB)
      this.launch("gemm_f32_backward_weight", this.a(a), this.a(b), this.a(c), k, m, n, accumulate);
    else throw new RangeError("gemm on CUDA does not take transA and transB together");
  }

  /**
   * A product of f32 activations x [rows, k] with a bf16 weight on tensor cores,
   * into `out` (+= when accumulating): x is split into bf16 hi + lo
   * (convert_f32_to_bf16_split) and both halves multiplied, so the result is
   * within f32 rounding of the CPU's, which widens the weight and keeps x in f32.
   */
  private bf16Product(
    launcher: "gemm_bf16_xwt" | "gemm_bf16_backward_input",
    x: F32,
    w: Weight,
    out: F32,
    m: number,
    n: number,
    k: number,
    accumulate: boolean,
  ): void {
    const count = x.length;
    this.scratch("bf16", count, (hi) =>
      this.scratch("bf16", count, (lo) =>
        this.scratch("f32", out.length, (part) => {
          this.launch("convert_f32_to_bf16_split", this.a(x), this.a(hi), this.a(lo), count);
          if (accumulate) {
            this.launch(launcher, this.a(hi), this.a(w), this.a(part), m, n, k);
            this.launch("add_in_place_f32", this.a(out), this.a(part), out.length);
          } else {
            this.launch(launcher, this.a(hi), this.a(w), this.a(out), m, n, k);
          }
          this.launch(launcher, this.a(lo), this.a(w), this.a(part), m, n, k);
          this.launch("add_in_place_f32", this.a(out), this.a(part), out.length);
        }),
      ),
    );
  }

  linear(
    x: F32,
    w: Weight,
    y: F32,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate = false,
    _mode: "auto" | "rows" = "auto",
  ): void {
    if (w.dtype === "f32") {
      this.launch("gemm_f32_xwt", this.a(x), this.a(w), this.a(y), rows, dOut, dIn, accumulate ? 1 : 0);
      return;
    }
    this.bf16Product(
      "gemm_bf16_xwt",
      this.view(x, 0, [rows * dIn]),
      w,
      this.view(y, 0, [rows * dOut]),
      rows,
      dOut,
      dIn,
      accumulate,
    );
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
    if (w.dtype === "f32") {
      this.launch(
        "gemm_f32_backward_input",
        this.a(dy),
        this.a(w),
        this.a(dx),
        rows,
        dOut,
        dIn,
        accumulate ? 1 : 0,
      );
      return;
    }
    this.bf16Product(
      "gemm_bf16_backward_input",
      this.view(dy, 0, [rows * dOut]),
      w,
      this.view(dx, 0, [rows * dIn]),
      rows,
      dOut,
      dIn,
      accumulate,
    );
  }

  linearBackwardWeight(dy: F32, x: F32, dw: F32, rows: number, dIn: number, dOut: number): void {
    this.launch("gemm_f32_backward_weight", this.a(dy), this.a(x), this.a(dw), rows, dOut, dIn, 1);
  }

  /** On a GPU the weight as it is (bf16 stays bf16): the products read it directly. */
  packWeight(w: Weight, dOut: number, dIn: number): PackedWeight {
    if (w.length !== dOut * dIn)
      throw new RangeError(`packWeight: [${dOut}, ${dIn}] is not ${w.length} elements`);
    this.a(w);
    const handle: PackedWeight = Object.freeze({ dOut, dIn });
    this.packed.set(handle, w);
    return handle;
  }

  linearPacked(x: F32, w: PackedWeight, y: F32, rows: number, accumulate = false): void {
    const weight = this.packed.get(w);
    if (!weight) throw new TypeError("linearPacked: the weight was not packed by this backend");
    this.linear(x, weight, y, rows, w.dIn, w.dOut, accumulate);
  }

  sumRows(dy: F32, rows: number, d: number, out: F32): void {
    this.launch("sum_rows_f32", this.a(dy), rows, d, this.a(out));
  }

  // Multi-LoRA (lora-tables.ts).

  createLoraTable(dIn: number, dOut: number, adapters: LoraAdapterBuffers[]): LoraTable {
    return this.lora.create(dIn, dOut, adapters);
  }

  loraForward(x: F32, n: number, slots: I32, table: LoraTable, y: F32, _rowInvariant = false): void {
    this.lora.forward(x, n, slots, table, y);
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
    this.lora.backward(x, dy, n, slots, table, dx, grads);
  }

  // Attention and the paged KV cache.

  createKvCache(numBlocks: number, blockSize: number, numKvHeads: number, headDim: number): KvCache {
    const shape = [numBlocks, blockSize, numKvHeads, headDim];
    return Object.freeze({
      key: this.alloc("f32", shape),
      value: this.alloc("f32", shape),
      numBlocks,
      blockSize,
      numKvHeads,
      headDim,
    });
  }

  copyBlocks(caches: readonly KvCache[], copies: readonly BlockCopy[]): void {
    if (copies.length === 0) return;
    const from = Int32Array.from(copies, (c) => c.from);
    const to = Int32Array.from(copies, (c) => c.to);
    const tokens = Int32Array.from(copies, (c) => c.tokens);
    this.staged(from, (f) =>
      this.staged(to, (t) =>
        this.staged(tokens, (n) => {
          for (const c of caches) {
            const row = c.numKvHeads * c.headDim;
            this.launch(
              "copy_kv_blocks_f32",
              this.a(c.key),
              this.a(c.value),
              c.blockSize,
              row,
              this.a(f),
              this.a(t),
              this.a(n),
              copies.length,
            );
          }
        }),
      ),
    );
  }

  cacheWrite(cache: KvCache, k: F32, v: F32, nTokens: number, slotMapping: I32): void {
    this.launch(
      "cache_write_f32",
      this.a(k),
      this.a(v),
      this.a(slotMapping),
      nTokens,
      this.a(cache.key),
      this.a(cache.value),
      cache.numBlocks,
      cache.blockSize,
      cache.numKvHeads,
      cache.headDim,
    );
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
    this.launch(
      "paged_attention_f32",
      this.a(q),
      this.a(out),
      nRows,
      this.a(rows.rowSeq),
      this.a(rows.rowPos),
      this.a(rows.blockTables),
      rows.maxBlocksPerSeq,
      this.a(cache.key),
      this.a(cache.value),
      cache.blockSize,
      numHeads,
      cache.numKvHeads,
      cache.headDim,
      scale,
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
    this.launch(
      "attention_forward_f32",
      this.a(q),
      this.a(k),
      this.a(v),
      this.a(out),
      this.a(lse),
      nTokens,
      this.a(seqStarts),
      seqStarts.length - 1,
      heads.numHeads,
      heads.numKvHeads,
      heads.headDim,
      heads.scale,
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
    this.launch(
      "attention_backward_f32",
      this.a(q),
      this.a(k),
      this.a(v),
      this.a(out),
      this.a(lse),
      this.a(dOut),
      this.a(dq),
      this.a(dk),
      this.a(dv),
      nTokens,
      this.a(seqStarts),
      seqStarts.length - 1,
      heads.numHeads,
      heads.numKvHeads,
      heads.headDim,
      heads.scale,
    );
  }

  // Norms, RoPE, activations, embedding, row moves.

  rmsNorm(x: F32, weight: F32, out: F32, invRms: F32 | null, n: number, d: number, eps: number): void {
    this.launch(
      "rmsnorm_f32",
      this.a(x),
      this.a(weight),
      this.a(out),
      this.buffers.optional(invRms),
      n,
      d,
      eps,
    );
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
    this.launch(
      "rmsnorm_backward_f32",
      this.a(x),
      this.a(weight),
      this.buffers.optional(invRms),
      eps,
      this.a(dOut),
      this.a(dx),
      accumulate ? 1 : 0,
      this.buffers.optional(dWeight),
      n,
      d,
    );
  }

  /** The frequencies on the device, uploaded once per RopeFrequencies object. */
  private invFreq(freqs: RopeFrequencies): F32 {
    let buffer = this.frequencies.get(freqs);
    if (!buffer) {
      buffer = this.upload(freqs.invFreq);
      this.frequencies.set(freqs, buffer);
    }
    return buffer;
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
    this.launch(
      backward ? "rope_backward_f32" : "rope_forward_f32",
      this.a(x),
      this.a(positions),
      this.a(this.invFreq(freqs)),
      n,
      heads,
      headDim,
      freqs.invFreq.length,
      freqs.attentionScaling,
    );
  }

  swiglu(gate: F32, up: F32, out: F32): void {
    this.launch("swiglu_forward_f32", this.a(gate), this.a(up), this.a(out), gate.length);
  }

  swigluBackward(dOut: F32, gate: F32, up: F32, dGate: F32, dUp: F32): void {
    this.launch(
      "swiglu_backward_f32",
      this.a(dOut),
      this.a(gate),
      this.a(up),
      this.a(dGate),
      this.a(dUp),
      gate.length,
    );
  }

  embedding(ids: I32, table: Weight, out: F32, n: number, _vocab: number, d: number): void {
    this.launch(`embedding_forward_${table.dtype}`, this.a(ids), this.a(table), this.a(out), n, d);
  }

  embeddingBackward(ids: I32, dOut: F32, dTable: F32, n: number, _vocab: number, d: number): void {
    this.launch("embedding_backward_f32", this.a(ids), this.a(dOut), this.a(dTable), n, d);
  }

  addInPlace(target: F32, source: F32): void {
    if (target.length !== source.length) {
      throw new RangeError(`addInPlace: ${source.length} elements into ${target.length}`);
    }
    this.launch("add_in_place_f32", this.a(target), this.a(source), target.length);
  }

  addBias(y: F32, bias: F32, rows: number, d: number): void {
    this.launch("add_bias_f32", this.a(y), this.a(bias), rows, d);
  }

  gatherRows(source: F32, rows: I32, d: number, out: F32): void {
    this.launch("gather_rows_f32", this.a(source), this.a(rows), rows.length, d, this.a(out));
  }

  scatterRows(target: F32, rows: I32, d: number, source: F32): void {
    this.launch("scatter_rows_f32", this.a(target), this.a(rows), rows.length, d, this.a(source));
  }

  // Losses, with per-token outputs.

  logSoftmaxGather(logits: F32, targets: I32, vocab: number): { logprobs: F32; lse: F32 } {
    const rows = targets.length;
    const logprobs = this.alloc("f32", [rows]);
    const lse = this.alloc("f32", [rows]);
    this.launch(
      "log_softmax_gather_f32",
      this.a(logits),
      this.a(targets),
      this.a(logprobs),
      this.a(lse),
      rows,
      vocab,
    );
    return { logprobs, lse };
  }

  logSoftmaxGatherBackward(
    logits: F32,
    targets: I32,
    lse: F32,
    dLogprobs: F32,
    vocab: number,
    dLogits: F32,
  ): void {
    this.launch(
      "log_softmax_gather_backward_f32",
      this.a(logits),
      this.a(targets),
      this.a(lse),
      this.a(dLogprobs),
      this.a(dLogits),
      targets.length,
      vocab,
    );
  }

  /** Tiles are the CPU's cache blocking; the device kernel has its own. */
  unembedLogprobs(
    hidden: F32,
    w: F32,
    targets: I32,
    d: number,
    vocab: number,
    _tiles?: UnembedTiles,
  ): { logprobs: F32; lse: F32 } {
    const n = targets.length;
    const logprobs = this.alloc("f32", [n]);
    const lse = this.alloc("f32", [n]);
    const words = Math.ceil(this.dev.workspaceBytes("unembed_logprobs_f32", n, vocab) / 4);
    this.scratch("f32", words, (workspace) =>
      this.launch(
        "unembed_logprobs_f32",
        this.a(hidden),
        this.a(w),
        this.a(targets),
        this.a(logprobs),
        this.a(lse),
        n,
        d,
        vocab,
        this.a(workspace),
      ),
    );
    return { logprobs, lse };
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
    _tiles?: UnembedTiles,
  ): void {
    this.launch(
      "unembed_logprobs_backward_f32",
      this.a(hidden),
      this.a(w),
      this.a(targets),
      this.a(lse),
      this.a(dLogprobs),
      this.a(dHidden),
      this.buffers.optional(dW),
      targets.length,
      d,
      vocab,
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
    const out = this.alloc("f64", [weights.length]);
    this.launch(
      "reference_kl_f32",
      this.a(logits),
      this.a(lse),
      this.a(refLogits),
      this.a(refLse),
      this.a(weights),
      weights.length,
      vocab,
      this.a(dLogits),
      this.a(out),
    );
    return out;
  }

  // The optimizer.

  adamwStep(param: F32, grad: F32, m: F32, v: F32, h: AdamwHyper): void {
    this.launch(
      "adamw_step_f32",
      this.a(param),
      this.a(grad),
      this.a(m),
      this.a(v),
      param.length,
      h.lr,
      h.beta1,
      h.beta2,
      h.eps,
      h.weightDecay,
      h.step,
      h.gradScale ?? 1,
    );
  }

  /** One f64 per buffer on the device, one read back, summed in f64 on the host. */
  sumOfSquares(buffers: readonly F32[]): number {
    if (buffers.length === 0) return 0;
    return this.scratch("f64", buffers.length, (sums) => {
      buffers.forEach((b, i) => {
        this.launch("sum_of_squares_f32", this.a(b), b.length, this.a(sums) + BigInt(8 * i));
      });
      let total = 0;
      for (const s of this.download(sums)) total += s;
      return total;
    });
  }

  scale(buffers: readonly F32[], factor: number): void {
    for (const b of buffers) this.launch("scale_f32", this.a(b), b.length, factor);
  }

  // Sampling, on the device: only tokens and logprobs come back.

  sampleRows(logits: F32, vocab: number, draws: SampleDraws): { tokens: I32; logprobs: DeviceBuffer<"f64"> } {
    const count = draws.rowOf.length;
    const tokens = this.alloc("i32", [count]);
    const logprobs = this.alloc("f64", [count]);
    if (count === 0) return { tokens, logprobs };
    const inputs = [draws.rowOf, draws.temperatures, draws.topK, draws.topP, draws.minP, draws.uniforms].map(
      (x) => this.upload(x),
    );
    try {
      const [rowOf, temperatures, topK, topP, minP, uniforms] = inputs.map((b) => this.a(b));
      this.launch(
        "sample_rows_f32",
        this.a(logits),
        logits.length / vocab,
        vocab,
        rowOf as bigint,
        count,
        temperatures as bigint,
        topK as bigint,
        topP as bigint,
        minP as bigint,
        uniforms as bigint,
        this.a(tokens),
        this.a(logprobs),
      );
    } finally {
      for (const b of inputs) this.free(b);
    }
    return { tokens, logprobs };
  }

  scoreRows(
    logits: F32,
    vocab: number,
    targets: I32,
    k: number,
  ): { logprobs: DeviceBuffer<"f64">; topIds: I32; topLogprobs: DeviceBuffer<"f64"> } {
    if (!Number.isInteger(k) || k < 0 || k > MAX_SCORE_K) {
      throw new RangeError(`scoreRows on CUDA keeps 0 to ${MAX_SCORE_K} top logprobs a row (asked for ${k})`);
    }
    const rows = targets.length;
    const logprobs = this.alloc("f64", [rows]);
    const topIds = this.alloc("i32", [rows, k]);
    const topLogprobs = this.alloc("f64", [rows, k]);
    this.launch(
      "score_rows_f32",
      this.a(logits),
      rows,
      vocab,
      this.a(targets),
      k,
      this.a(logprobs),
      this.buffers.optional(k > 0 ? topIds : null),
      this.buffers.optional(k > 0 ? topLogprobs : null),
    );
    return { logprobs, topIds, topLogprobs };
  }
}
