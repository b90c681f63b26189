// The CUDA backend on the emulated device (the kernels' CPU execution, issue
// 47) against the CPU backend: every op on the same inputs, within the
// kernels' tolerances (1e-5 of the result's scale, bf16 weights included:
// activations go through the tensor cores as two bf16 halves; sampling the
// same tokens). Skipped, saying why, where the emulated device
// was not built (no cmake or Boost.Context at install).
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { sampleDraws } from "../../ops/sample.ts";
import { randomF32, rng } from "../../test-utils.ts";
import type { Backend } from "../backend.ts";
import type { DeviceBuffer, DType, HostArray } from "../buffer.ts";
import { CpuBackend } from "../cpu.ts";
import { CudaBackend } from "./cuda.ts";
import { CUDA_EMU_ADDON_FILE, openEmulatedDevice } from "./device.ts";

const built = existsSync(CUDA_EMU_ADDON_FILE);
if (!built)
  console.log(
    `skipped: ${CUDA_EMU_ADDON_FILE} was not built (npm run build:cuda-emu -w @opentinker/kernels)`,
  );

type Outputs = Record<string, HostArray>;

/** The largest |a − b| over the largest |b| (1 when b is all zeros). */
function relativeError(a: HostArray, b: HostArray): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (Number.isNaN(x) !== Number.isNaN(y)) return Number.POSITIVE_INFINITY;
    diff = Math.max(diff, Math.abs(x - y));
    scale = Math.max(scale, Math.abs(y));
  }
  return diff / (scale || 1);
}

describe.skipIf(!built)("the CUDA backend on the emulated device", () => {
  const cpu = new CpuBackend();
  let opened: CudaBackend | undefined;
  /** Opened on first use, so a skipped suite opens nothing. */
  const emulated = (): CudaBackend => {
    opened ??= new CudaBackend(openEmulatedDevice(), "cuda-emulated");
    return opened;
  };

  /**
   * Runs fn on both backends; every output of CUDA's within tol of the CPU's
   * (exact for integers). fn must build its inputs from values made outside it.
   */
  function agree(fn: (be: Backend) => Record<string, DeviceBuffer>, tol = 1e-5): void {
    const read = (be: Backend): Outputs =>
      Object.fromEntries(Object.entries(fn(be)).map(([k, v]) => [k, be.download(v).slice() as HostArray]));
    const want = read(cpu);
    const got = read(emulated());
    for (const [name, expected] of Object.entries(want)) {
      const actual = got[name] as HostArray;
      expect(actual.length, name).toBe(expected.length);
      if (expected instanceof Int32Array) expect([...actual], name).toEqual([...expected]);
      else expect(relativeError(actual, expected), name).toBeLessThanOrEqual(tol);
    }
  }

  const random = rng(5);
  const f32 = (n: number, scale = 1) => randomF32(n, random, scale);

  it("moves memory: upload, write, view, copy, fill, download; refuses foreign and freed buffers", () => {
    const cuda = emulated();
    const a = cuda.upload(Float32Array.of(1, 2, 3, 4, 5, 6), [2, 3]);
    cuda.write(a, Float32Array.of(9, 8), 2);
    const row = cuda.view(a, 3, [3]);
    const b = cuda.alloc("f32", [3]);
    cuda.copy(b, row);
    cuda.fill(row, 7);
    expect([...cuda.download(a)]).toEqual([1, 2, 9, 7, 7, 7]);
    expect([...cuda.download(b)]).toEqual([8, 5, 6]);
    const i = cuda.alloc("i32", [4]);
    cuda.fill(i, -3);
    expect([...cuda.download(i)]).toEqual([-3, -3, -3, -3]);
    expect(() => cuda.write(a, new Float32Array(5), 2)).toThrow(/overruns a buffer of 6/);
    expect(() => cuda.view(a, 4, [3])).toThrow(/outside a buffer of 6/);
    expect(() => cuda.download(cpu.upload(Float32Array.of(1)))).toThrow(
      /a cpu buffer \[1\] was given to the cuda:0 backend/,
    );
    cuda.free(b);
    expect(() => cuda.download(b)).toThrow(/used after it was freed/);
    expect(cuda.device.kind).toBe("cuda");
    expect(cuda.device.description).toMatch(/emulated/);
  });

  it("runs the dense products in f32 and bf16", () => {
    const [rows, dIn, dOut] = [5, 24, 13];
    const x = f32(rows * dIn);
    const w = f32(dOut * dIn, 0.3);
    const dy = f32(rows * dOut);
    const dw0 = f32(dOut * dIn);
    agree((be) => {
      const y = be.upload(new Float32Array(rows * dOut).fill(0.5), [rows, dOut]);
      be.linear(be.upload(x), be.upload(w), y, rows, dIn, dOut, true);
      const dx = be.alloc("f32", [rows, dIn]);
      be.linearBackwardInput(be.upload(dy), be.upload(w), dx, rows, dIn, dOut);
      const dw = be.upload(dw0.slice(), [dOut, dIn]);
      be.linearBackwardWeight(be.upload(dy), be.upload(x), dw, rows, dIn, dOut);
      const packed = be.packWeight(be.upload(w), dOut, dIn);
      const yp = be.alloc("f32", [rows, dOut]);
      be.linearPacked(be.upload(x), packed, yp, rows);
      const bias = be.alloc("f32", [dOut]);
      be.sumRows(be.upload(dy), rows, dOut, bias);
      // gemm's three layouts: a·bᵀ (accumulating), a·b, aᵀ·b.
      const abt = be.upload(dw0.slice(0, rows * dOut), [rows, dOut]);
      be.gemm(rows, dOut, dIn, be.upload(x), be.upload(w), abt, { transB: true, beta: 1 });
      const ab = be.alloc("f32", [rows, dIn]);
      be.gemm(rows, dIn, dOut, be.upload(dy), be.upload(w), ab);
      const atb = be.alloc("f32", [dOut, dIn]);
      be.gemm(dOut, dIn, rows, be.upload(dy), be.upload(x), atb, { transA: true });
      return { y, dx, dw, yp, bias, abt, ab, atb };
    });
    const wb = new Uint16Array(w.buffer.slice(0)).filter((_, i) => i % 2 === 1);
    agree((be) => {
      const y = be.alloc("f32", [rows, dOut]);
      be.linear(be.upload(x), be.upload(wb, [dOut, dIn]), y, rows, dIn, dOut);
      const dx = be.alloc("f32", [rows, dIn]);
      be.linearBackwardInput(be.upload(dy), be.upload(wb, [dOut, dIn]), dx, rows, dIn, dOut, false);
      return { y, dx };
    }, 1e-5);
  });

  it("runs norms, RoPE, SwiGLU, embeddings and row moves", () => {
    const [n, d, heads, headDim] = [7, 32, 4, 8];
    const x = f32(n * d);
    const norm = f32(d, 2);
    const freqs = { invFreq: Float32Array.of(1, 0.1, 0.01, 0.001), attentionScaling: 1 };
    const positions = Int32Array.of(0, 1, 2, 7, 3, 100, 5);
    const ids = Int32Array.of(3, 0, 9, 3, 1, 2, 8);
    const table = f32(10 * d);
    agree((be) => {
      const out = be.alloc("f32", [n, d]);
      const inv = be.alloc("f32", [n]);
      be.rmsNorm(be.upload(x), be.upload(norm), out, inv, n, d, 1e-6);
      const dx = be.alloc("f32", [n, d]);
      const dWeight = be.alloc("f32", [d]);
      be.rmsNormBackward(be.upload(x), be.upload(x), be.upload(norm), inv, dx, dWeight, n, d, 1e-6);
      const roped = be.upload(x.slice(0, n * heads * headDim));
      be.rope(roped, be.upload(positions), freqs, n, heads, headDim);
      const back = be.upload(x.slice(0, n * heads * headDim));
      be.rope(back, be.upload(positions), freqs, n, heads, headDim, true);
      const act = be.alloc("f32", [n, d]);
      be.swiglu(be.upload(x), be.upload(norm.length === d ? x.map((v) => v / 2) : x), act);
      const dGate = be.alloc("f32", [n, d]);
      const dUp = be.alloc("f32", [n, d]);
      be.swigluBackward(be.upload(x), be.upload(x), be.upload(x.map((v) => v / 2)), dGate, dUp);
      const emb = be.alloc("f32", [n, d]);
      be.embedding(be.upload(ids), be.upload(table, [10, d]), emb, n, 10, d);
      const dTable = be.alloc("f32", [10, d]);
      be.embeddingBackward(be.upload(ids), be.upload(x), dTable, n, 10, d);
      const sum = be.upload(x.slice());
      be.addInPlace(sum, be.upload(x.map((v) => v * 3)));
      be.addBias(sum, be.upload(norm), n, d);
      const gathered = be.alloc("f32", [3, d]);
      be.gatherRows(be.upload(x), be.upload(Int32Array.of(6, 0, 3)), d, gathered);
      const scattered = be.upload(table.slice(), [10, d]);
      be.scatterRows(scattered, be.upload(Int32Array.of(9, 2, 4)), d, gathered);
      return { out, inv, dx, dWeight, roped, back, act, dGate, dUp, emb, dTable, sum, gathered, scattered };
    });
  });

  it("runs training attention, the paged cache and paged attention", () => {
    const heads = { numHeads: 4, numKvHeads: 2, headDim: 8, scale: 1 / Math.sqrt(8) };
    const n = 11;
    const starts = Int32Array.of(0, 4, 11);
    const q = f32(n * 32);
    const k = f32(n * 16);
    const v = f32(n * 16);
    const dOut = f32(n * 32);
    agree((be) => {
      const out = be.alloc("f32", [n, 32]);
      const lse = be.alloc("f32", [n, 4]);
      const seq = be.upload(starts);
      be.attentionForward(be.upload(q), be.upload(k), be.upload(v), n, seq, heads, out, lse);
      const dq = be.alloc("f32", [n, 32]);
      const dk = be.alloc("f32", [n, 16]);
      const dv = be.alloc("f32", [n, 16]);
      be.attentionBackward(
        be.upload(q),
        be.upload(k),
        be.upload(v),
        out,
        lse,
        be.upload(dOut),
        n,
        seq,
        heads,
        dq,
        dk,
        dv,
      );
      const cache = be.createKvCache(6, 4, 2, 8);
      be.cacheWrite(
        cache,
        be.upload(k),
        be.upload(v),
        n,
        be.upload(Int32Array.from({ length: n }, (_, i) => i + 2)),
      );
      be.copyBlocks([cache], [{ from: 1, to: 5, tokens: 3 }]);
      const attn = be.alloc("f32", [3, 32]);
      const rows = {
        rowSeq: be.upload(Int32Array.of(0, 0, 1)),
        rowPos: be.upload(Int32Array.of(3, 8, 2)),
        blockTables: be.upload(Int32Array.of(0, 1, 2, 5, 3, 4), [2, 3]),
        numSeqs: 2,
        maxBlocksPerSeq: 3,
      };
      be.pagedAttention(be.upload(q.slice(0, 3 * 32)), 3, rows, cache, 4, heads.scale, attn);
      return { out, lse, dq, dk, dv, key: cache.key, value: cache.value, attn };
    });
  });

  it("runs the losses with per-token outputs and the reference KL", () => {
    const [rows, vocab, d] = [5, 37, 12];
    const logits = f32(rows * vocab, 3);
    const targets = Int32Array.of(0, 36, 5, 5, 20);
    const hidden = f32(rows * d);
    const w = f32(vocab * d, 0.5);
    const g = f32(rows);
    const refLogits = f32(rows * vocab, 3);
    agree((be) => {
      const { logprobs, lse } = be.logSoftmaxGather(be.upload(logits), be.upload(targets), vocab);
      const dLogits = be.alloc("f32", [rows, vocab]);
      be.logSoftmaxGatherBackward(be.upload(logits), be.upload(targets), lse, be.upload(g), vocab, dLogits);
      const ref = be.upload(refLogits);
      const refOut = be.logSoftmaxGather(ref, be.upload(targets), vocab);
      const kl = be.referenceKl(
        be.upload(logits),
        lse,
        ref,
        refOut.lse,
        be.upload(Float32Array.of(1, 0, 0.5, 2, 1)),
        vocab,
        dLogits,
      );
      const u = be.unembedLogprobs(be.upload(hidden), be.upload(w), be.upload(targets), d, vocab);
      const dHidden = be.alloc("f32", [rows, d]);
      const dW = be.alloc("f32", [vocab, d]);
      be.unembedLogprobsBackward(
        be.upload(hidden),
        be.upload(w),
        be.upload(targets),
        u.lse,
        be.upload(g),
        dHidden,
        dW,
        d,
        vocab,
      );
      return { logprobs, lse, dLogits, kl, uLogprobs: u.logprobs, uLse: u.lse, dHidden, dW };
    });
  });

  it("runs AdamW, the gradient norm and clipping", () => {
    const p = f32(300);
    const grad = f32(300);
    const m0 = f32(300, 0.1);
    const v0 = f32(300, 0.1).map(Math.abs);
    const hyper = { lr: 1e-2, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, step: 3, gradScale: 0.5 };
    let norms: number[] = [];
    agree((be) => {
      const param = be.upload(p.slice());
      const m = be.upload(m0.slice());
      const v = be.upload(v0.slice());
      const gb = be.upload(grad.slice());
      be.adamwStep(param, gb, m, v, hyper);
      norms.push(be.sumOfSquares([gb, param]));
      be.scale([gb], 0.25);
      return { param, m, v, gb };
    });
    expect(Math.abs((norms[1] as number) - (norms[0] as number)) / (norms[0] as number)).toBeLessThan(1e-6);
    norms = [];
  });

  it("samples the CPU's tokens from the same uniforms and scores the top k", () => {
    const [rows, vocab] = [3, 50];
    const logits = f32(rows * vocab, 4);
    const draws = sampleDraws(5);
    draws.rowOf.set([0, 1, 2, 2, 1]);
    draws.temperatures.set([1, 0.7, 0, 1.3, 1]);
    draws.topK.set([0, 5, 0, 10, 0]);
    draws.topP.set([1, 1, 1, 0.8, 0.9]);
    draws.minP.set([0, 0, 0, 0, 0.05]);
    draws.uniforms.set([0.1, 0.5, 0.9, 0.33, 0.999]);
    agree((be) => {
      const s = be.sampleRows(be.upload(logits), vocab, draws);
      const scored = be.scoreRows(be.upload(logits), vocab, be.upload(Int32Array.of(4, 0, 49)), 5);
      return { tokens: s.tokens, sampled: s.logprobs, ...scored };
    });
  });

  it("runs the multi-LoRA op over per-row slots, forward and backward, with mixed ranks", () => {
    const [n, dIn, dOut] = [6, 20, 9];
    const ranks = [2, 5, 1];
    const adapters = ranks.map((r) => ({ a: f32(r * dIn, 0.3), b: f32(dOut * r, 0.3), scale: 0.5 + r }));
    const slots = Int32Array.of(1, -1, 0, 1, 2, 1);
    const x = f32(n * dIn);
    const dy = f32(n * dOut);
    agree((be) => {
      const table = be.createLoraTable(
        dIn,
        dOut,
        adapters.map((ad, i) => ({
          a: be.upload(ad.a, [ranks[i] as number, dIn]),
          b: be.upload(ad.b, [dOut, ranks[i] as number]),
          scale: ad.scale,
        })),
      );
      const gradBuffers = ranks.map((r) => ({
        a: be.alloc("f32", [r, dIn]),
        b: be.alloc("f32", [dOut, r]),
        scale: 1,
      }));
      const grads = be.createLoraTable(dIn, dOut, gradBuffers);
      const y = be.upload(dy.slice(), [n, dOut]);
      be.loraForward(be.upload(x), n, be.upload(slots), table, y);
      const dx = be.alloc("f32", [n, dIn]);
      be.loraBackward(be.upload(x), be.upload(dy), n, be.upload(slots), table, dx, grads);
      const out: Record<string, DeviceBuffer<DType>> = { y, dx };
      gradBuffers.forEach((g, i) => {
        out[`dA${i}`] = g.a;
        out[`dB${i}`] = g.b;
      });
      return out;
    });
  });
});
