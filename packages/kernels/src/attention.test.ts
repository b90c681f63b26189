import { describe, expect, it } from "vitest";
import { kernelInfo, setKernelThreads } from "./index.ts";
import { loadNative } from "./loader.ts";
import {
  type AttentionHeads,
  attentionBackward,
  attentionDecode,
  attentionForward,
  cacheWrite,
  createPagedKvCache,
  type PagedKvCache,
  type PagedRows,
  pagedAttention,
} from "./ops/attention.ts";
import {
  refAttentionBackward,
  refAttentionForward,
  refCacheWrite,
  refPagedAttention,
} from "./reference/attention.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

// Outputs are convex combinations of values in [-1, 1] computed in fp32; measured
// errors are ~1e-7 for outputs and ~5e-6 for gradients (which sum over a sequence's
// rows and a kv group's heads), so these bounds leave a margin of 10× or more.
const OUT_ATOL = 1e-5;
const GRAD_ATOL = 5e-5;
const RTOL = 1e-4;

/** Sequences packed along the token axis, and the same tokens in a paged cache. */
interface Batch {
  lens: number[];
  nTokens: number;
  seqStarts: Int32Array; // [numSeqs + 1]
  heads: AttentionHeads;
  q: Float32Array; // [nTokens, numHeads, headDim]
  k: Float32Array; // [nTokens, numKvHeads, headDim]
  v: Float32Array; // [nTokens, numKvHeads, headDim]
  cache: PagedKvCache;
  blockTables: Int32Array; // [numSeqs, maxBlocksPerSeq]
  maxBlocksPerSeq: number;
  slotMapping: Int32Array; // [nTokens]
}

interface BatchSpec {
  lens: number[];
  blockSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
}

function shuffled(n: number, random: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}

/**
 * Random q, k, v for the sequences, and a cache whose physical blocks are handed
 * out in shuffled order (non-contiguous tables, spare blocks, -1 in unused table
 * entries). Every slot starts as NaN, so reading a slot that was never written
 * poisons the output.
 */
function makeBatch(spec: BatchSpec, random: () => number): Batch {
  const { lens, blockSize, numHeads, numKvHeads, headDim } = spec;
  const blocksOf = (len: number) => Math.ceil(len / blockSize);
  const maxBlocksPerSeq = Math.max(...lens.map(blocksOf)) + 1;
  const numBlocks = lens.reduce((sum, len) => sum + blocksOf(len), 0) + 3;
  const physical = shuffled(numBlocks, random);
  const blockTables = new Int32Array(lens.length * maxBlocksPerSeq).fill(-1);
  const seqStarts = new Int32Array(lens.length + 1);
  let next = 0;
  lens.forEach((len, s) => {
    for (let b = 0; b < blocksOf(len); b++) blockTables[s * maxBlocksPerSeq + b] = physical[next++] as number;
    seqStarts[s + 1] = (seqStarts[s] as number) + len;
  });
  const nTokens = seqStarts[lens.length] as number;
  const slotMapping = new Int32Array(nTokens);
  lens.forEach((len, s) => {
    for (let t = 0; t < len; t++) {
      const block = blockTables[s * maxBlocksPerSeq + Math.floor(t / blockSize)] as number;
      slotMapping[(seqStarts[s] as number) + t] = block * blockSize + (t % blockSize);
    }
  });
  const q = randomF32(nTokens * numHeads * headDim, random);
  const k = randomF32(nTokens * numKvHeads * headDim, random);
  const v = randomF32(nTokens * numKvHeads * headDim, random);
  const cache = createPagedKvCache(numBlocks, blockSize, numKvHeads, headDim);
  cache.keyCache.fill(Number.NaN);
  cache.valueCache.fill(Number.NaN);
  cacheWrite(cache, k, v, nTokens, slotMapping);
  const heads = { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
  return { lens, nTokens, seqStarts, heads, q, k, v, cache, blockTables, maxBlocksPerSeq, slotMapping };
}

/** Rows (sequence, position) of a paged-attention call; q rows are taken from the packed q. */
function rowsOf(batch: Batch, picks: [seq: number, pos: number][]): { rows: PagedRows; q: Float32Array } {
  const { numHeads, headDim } = batch.heads;
  const width = numHeads * headDim;
  const q = new Float32Array(picks.length * width);
  picks.forEach(([s, p], i) => {
    const token = (batch.seqStarts[s] as number) + p;
    q.set(batch.q.subarray(token * width, (token + 1) * width), i * width);
  });
  const rows = {
    rowSeq: Int32Array.from(picks.map(([s]) => s)),
    rowPos: Int32Array.from(picks.map(([, p]) => p)),
    blockTables: batch.blockTables,
    numSeqs: batch.lens.length,
    maxBlocksPerSeq: batch.maxBlocksPerSeq,
  };
  return { rows, q };
}

function runPaged(batch: Batch, picks: [number, number][]): { actual: Float32Array; expected: Float64Array } {
  const { numHeads, numKvHeads, headDim, scale } = batch.heads;
  const { rows, q } = rowsOf(batch, picks);
  const actual = new Float32Array(q.length).fill(Number.NaN);
  pagedAttention(q, picks.length, rows, batch.cache, numHeads, scale, actual);
  const { keyCache, valueCache, blockSize } = batch.cache;
  const expected = refPagedAttention(
    q,
    picks.length,
    rows.rowSeq,
    rows.rowPos,
    rows.blockTables,
    rows.maxBlocksPerSeq,
    keyCache,
    valueCache,
    blockSize,
    numHeads,
    numKvHeads,
    headDim,
    scale,
  );
  return { actual, expected };
}

/** Positions first..last of sequence s, as rows. */
const chunk = (s: number, first: number, last: number): [number, number][] =>
  Array.from({ length: last - first + 1 }, (_, i) => [s, first + i]);

/** Every token of every sequence, as rows. */
const everyToken = (batch: Batch) => batch.lens.flatMap((len, s) => (len > 0 ? chunk(s, 0, len - 1) : []));

function runForward(batch: Batch): { out: Float32Array; lse: Float32Array } {
  const out = new Float32Array(batch.q.length).fill(Number.NaN);
  const lse = new Float32Array(batch.nTokens * batch.heads.numHeads).fill(Number.NaN);
  attentionForward(batch.q, batch.k, batch.v, batch.nTokens, batch.seqStarts, batch.heads, out, lse);
  return { out, lse };
}

const refShape = (batch: Batch) => ({ nTokens: batch.nTokens, seqStarts: batch.seqStarts, ...batch.heads });

describe("createPagedKvCache", () => {
  it("asks for huge pages only where whole 2 MiB pages fit, and the cache reads as zeros and takes writes", () => {
    const native = loadNative();
    expect(native.adviseHugePages(new Float32Array(1024))).toBe(false);
    // 64 MiB holds whole huge pages; Linux accepts the advice (on another system it is false).
    expect(native.adviseHugePages(new Float32Array(16 << 20))).toBe(process.platform === "linux");
    const cache = createPagedKvCache(2048, 16, 4, 32); // 16 MiB per array
    expect(cache.keyCache.every((x) => x === 0) && cache.valueCache.every((x) => x === 0)).toBe(true);
    const k = new Float32Array(4 * 32).fill(1.5);
    cacheWrite(cache, k, k, 1, Int32Array.of(2048 * 16 - 1));
    expect(cache.keyCache.at(-1)).toBe(1.5);
  });
});

describe("cacheWrite", () => {
  for (const blockSize of [1, 16]) {
    it(`writes each token's K/V to its slot, skips slot -1 and leaves other slots alone (block size ${blockSize})`, () => {
      const random = rng(1 + blockSize);
      const [numKvHeads, headDim, nTokens] = [2, 5, 9];
      const cache = createPagedKvCache(Math.ceil(12 / blockSize), blockSize, numKvHeads, headDim);
      cache.keyCache.set(randomF32(cache.keyCache.length, random));
      cache.valueCache.set(randomF32(cache.valueCache.length, random));
      const slots = shuffled(cache.numBlocks * cache.blockSize, random).slice(0, nTokens);
      slots[3] = -1;
      const slotMapping = Int32Array.from(slots);
      const k = randomF32(nTokens * numKvHeads * headDim, random);
      const v = randomF32(nTokens * numKvHeads * headDim, random);
      const expected = refCacheWrite(
        k,
        v,
        nTokens,
        slotMapping,
        cache.keyCache,
        cache.valueCache,
        numKvHeads,
        headDim,
      );
      cacheWrite(cache, k, v, nTokens, slotMapping);
      expect(Array.from(cache.keyCache)).toEqual(Array.from(expected.keyCache, Math.fround));
      expect(Array.from(cache.valueCache)).toEqual(Array.from(expected.valueCache, Math.fround));
    });
  }
});

describe("pagedAttention", () => {
  const cases: { name: string; spec: BatchSpec; picks: (lens: number[]) => [number, number][] }[] = [
    {
      name: "one decode row of a length-1 sequence (head dim 3)",
      spec: { lens: [1], blockSize: 16, numHeads: 1, numKvHeads: 1, headDim: 3 },
      picks: () => [[0, 0]],
    },
    {
      name: "GQA 7 (14 query / 2 kv heads, dim 64): a prefill chunk mid-block plus decode rows of other sequences",
      spec: { lens: [37, 1, 20], blockSize: 16, numHeads: 14, numKvHeads: 2, headDim: 64 },
      picks: () => [...chunk(0, 10, 36), [1, 0], [2, 19]],
    },
    {
      name: "GQA 2 with block size 1: decode rows first, then a chunk, sequences out of order",
      spec: { lens: [5, 9, 3], blockSize: 1, numHeads: 4, numKvHeads: 2, headDim: 3 },
      picks: () => [[2, 2], [0, 4], ...chunk(1, 3, 7), [0, 1]],
    },
    {
      name: "GQA 1 with odd head dim 17: rows at positions inside blocks, not the last one",
      spec: { lens: [40, 17], blockSize: 16, numHeads: 3, numKvHeads: 3, headDim: 17 },
      picks: () => [
        [0, 7],
        [0, 33],
        [1, 16],
        [1, 9],
      ],
    },
    {
      name: "8 query heads on one kv head, dim 128, several score tiles",
      spec: { lens: [70], blockSize: 16, numHeads: 8, numKvHeads: 1, headDim: 128 },
      picks: () => [
        [0, 69],
        [0, 31],
        [0, 32],
        [0, 64],
      ],
    },
  ];
  for (const { name, spec, picks } of cases) {
    it(`matches the float64 reference: ${name}`, () => {
      const batch = makeBatch(spec, rng(spec.headDim * 31 + spec.numHeads));
      const { actual, expected } = runPaged(batch, picks(spec.lens));
      expectClose(actual, expected, OUT_ATOL, RTOL);
    });
  }

  // A prefill chunk's rows share each K/V tile (runs of consecutive rows): every
  // row must still sum in its own fixed order, or the sampler's logprobs would
  // depend on how a prompt was chunked and differ from the trainer's.
  for (const spec of [
    { lens: [19, 1, 33, 0, 2], blockSize: 16, numHeads: 14, numKvHeads: 2, headDim: 64 },
    { lens: [6, 1, 11], blockSize: 1, numHeads: 4, numKvHeads: 2, headDim: 3 },
    { lens: [70, 45, 1, 20], blockSize: 16, numHeads: 8, numKvHeads: 4, headDim: 32 },
    { lens: [41, 9], blockSize: 16, numHeads: 6, numKvHeads: 1, headDim: 20 },
  ]) {
    const shape = `${spec.numHeads}/${spec.numKvHeads} heads, dim ${spec.headDim}, block size ${spec.blockSize}`;
    it(`gives each row the same bits in a chunk, alone, and from attentionForward (${shape})`, () => {
      const batch = makeBatch(spec, rng(5 + spec.blockSize));
      const picks = everyToken(batch);
      const { actual } = runPaged(batch, picks);
      const alone = picks.flatMap((pick) => [...runPaged(batch, [pick]).actual]);
      expect(actual).toEqual(Float32Array.from(alone));
      expect(actual).toEqual(runForward(batch).out);
    });
  }

  it("attentionDecode attends each sequence up to its newest token", () => {
    const spec = { lens: [512, 300, 17, 1], blockSize: 16, numHeads: 14, numKvHeads: 2, headDim: 64 };
    const batch = makeBatch(spec, rng(77));
    const picks = spec.lens.map((len, s): [number, number] => [s, len - 1]);
    const { expected } = runPaged(batch, picks);
    const { q } = rowsOf(batch, picks);
    const out = new Float32Array(q.length);
    const contextLens = Int32Array.from(spec.lens);
    const { numHeads, scale } = batch.heads;
    attentionDecode(
      q,
      contextLens,
      batch.blockTables,
      batch.maxBlocksPerSeq,
      batch.cache,
      numHeads,
      scale,
      out,
    );
    expectClose(out, expected, OUT_ATOL, RTOL);
  });

  it("stays finite and accurate when scores are far beyond fp32 exp range (running max)", () => {
    const spec = { lens: [45, 3], blockSize: 16, numHeads: 2, numKvHeads: 1, headDim: 8 };
    const batch = makeBatch(spec, rng(9));
    batch.q = batch.q.map((x) => x * 40);
    batch.heads.scale = 4;
    const { actual, expected } = runPaged(batch, everyToken(batch));
    expect(actual.every(Number.isFinite)).toBe(true);
    expectClose(actual, expected, 1e-4, 1e-3);
  });
});

describe("attentionForward", () => {
  const specs: BatchSpec[] = [
    { lens: [1], blockSize: 16, numHeads: 1, numKvHeads: 1, headDim: 3 },
    { lens: [7, 0, 1, 12], blockSize: 16, numHeads: 4, numKvHeads: 2, headDim: 3 },
    { lens: [40, 25], blockSize: 16, numHeads: 14, numKvHeads: 2, headDim: 64 },
    { lens: [9, 33], blockSize: 16, numHeads: 3, numKvHeads: 3, headDim: 19 },
  ];
  for (const spec of specs) {
    const { numHeads, numKvHeads, headDim } = spec;
    it(`matches the reference output and log-sum-exp (lens ${spec.lens}, ${numHeads}/${numKvHeads} heads, dim ${headDim})`, () => {
      const batch = makeBatch(spec, rng(headDim + numHeads));
      const { out, lse } = runForward(batch);
      const expected = refAttentionForward(batch.q, batch.k, batch.v, refShape(batch));
      expectClose(out, expected.out, OUT_ATOL, RTOL);
      expectClose(lse, expected.lse, OUT_ATOL, RTOL);
    });
  }

  it("forward and backward give the same bits on one thread as on the whole pool", () => {
    const spec = { lens: [30, 50, 1], blockSize: 16, numHeads: 6, numKvHeads: 2, headDim: 24 };
    const random = rng(4);
    const batch = makeBatch(spec, random);
    const dOut = randomF32(batch.q.length, random);
    const run = () => {
      const { out, lse } = runForward(batch);
      const grads = [batch.q, batch.k, batch.v].map((x) => new Float32Array(x.length));
      const [dq, dk, dv] = grads as [Float32Array, Float32Array, Float32Array];
      const { q, k, v, nTokens, seqStarts, heads } = batch;
      attentionBackward(q, k, v, out, lse, dOut, nTokens, seqStarts, heads, dq, dk, dv);
      return [out, lse, ...grads].map((x) => Array.from(x));
    };
    const threads = kernelInfo().threads;
    const pooled = run();
    setKernelThreads(1);
    try {
      expect(run()).toEqual(pooled);
    } finally {
      setKernelThreads(threads);
    }
  });
});

describe("attentionBackward", () => {
  // L(q, k, v) = Σ w ⊙ out, differentiated by central differences in float64.
  // Step 1e-5: truncation ~1e-10 and rounding ~1e-11 against gradients of O(1).
  const FD_STEP = 1e-5;
  const FD_ATOL = 1e-7;
  const FD_RTOL = 1e-6;
  for (const spec of [
    { lens: [3, 1, 0, 3], blockSize: 16, numHeads: 4, numKvHeads: 2, headDim: 3 },
    { lens: [4, 2], blockSize: 16, numHeads: 7, numKvHeads: 1, headDim: 2 },
  ]) {
    it(`the reference agrees with central finite differences (${spec.numHeads}/${spec.numKvHeads} heads)`, () => {
      const random = rng(spec.numHeads);
      const batch = makeBatch(spec, random);
      const q = Float64Array.from(batch.q);
      const k = Float64Array.from(batch.k);
      const v = Float64Array.from(batch.v);
      const w = Float64Array.from(randomF32(q.length, random));
      const shape = { ...refShape(batch), scale: 0.8 };
      const loss = () =>
        refAttentionForward(q, k, v, shape).out.reduce((sum, o, i) => sum + o * (w[i] as number), 0);
      const grads = refAttentionBackward(q, k, v, w, shape);
      for (const [input, grad] of [
        [q, grads.dq],
        [k, grads.dk],
        [v, grads.dv],
      ] as const) {
        const numeric = new Float64Array(input.length);
        for (let i = 0; i < input.length; i++) {
          const x = input[i] as number;
          input[i] = x + FD_STEP;
          const plus = loss();
          input[i] = x - FD_STEP;
          const minus = loss();
          input[i] = x;
          numeric[i] = (plus - minus) / (2 * FD_STEP);
        }
        expectClose(grad, numeric, FD_ATOL, FD_RTOL);
      }
    });
  }

  const specs: BatchSpec[] = [
    { lens: [1], blockSize: 16, numHeads: 1, numKvHeads: 1, headDim: 3 },
    { lens: [7, 0, 1, 12], blockSize: 16, numHeads: 4, numKvHeads: 2, headDim: 3 },
    { lens: [45, 20], blockSize: 16, numHeads: 14, numKvHeads: 2, headDim: 64 },
    { lens: [9, 38], blockSize: 16, numHeads: 3, numKvHeads: 3, headDim: 21 },
    // Many key blocks and row blocks, a head dim of 32 + 8 and one of 2 × 32, a group of 8.
    { lens: [50, 3], blockSize: 16, numHeads: 6, numKvHeads: 3, headDim: 40 },
    { lens: [70, 17, 33], blockSize: 16, numHeads: 8, numKvHeads: 1, headDim: 128 },
  ];
  for (const spec of specs) {
    const { numHeads, numKvHeads, headDim } = spec;
    it(`overwrites dq, dk, dv with the reference gradients (lens ${spec.lens}, ${numHeads}/${numKvHeads} heads, dim ${headDim})`, () => {
      const random = rng(100 + headDim);
      const batch = makeBatch(spec, random);
      const { out, lse } = runForward(batch);
      const dOut = randomF32(out.length, random);
      const dq = new Float32Array(batch.q.length).fill(Number.NaN);
      const dk = new Float32Array(batch.k.length).fill(Number.NaN);
      const dv = new Float32Array(batch.v.length).fill(Number.NaN);
      const { q, k, v, nTokens, seqStarts, heads } = batch;
      attentionBackward(q, k, v, out, lse, dOut, nTokens, seqStarts, heads, dq, dk, dv);
      const expected = refAttentionBackward(q, k, v, dOut, refShape(batch));
      expectClose(dq, expected.dq, GRAD_ATOL, RTOL);
      expectClose(dk, expected.dk, GRAD_ATOL, RTOL);
      expectClose(dv, expected.dv, GRAD_ATOL, RTOL);
    });
  }
});

describe("attentionBackward, far beyond fp32 exp range", () => {
  it("stays finite and matches the reference when scores are huge (lse keeps exp in range)", () => {
    const spec = { lens: [45, 3], blockSize: 16, numHeads: 2, numKvHeads: 1, headDim: 8 };
    const random = rng(19);
    const batch = makeBatch(spec, random);
    batch.q = batch.q.map((x) => x * 40);
    batch.heads.scale = 4;
    const { out, lse } = runForward(batch);
    const dOut = randomF32(out.length, random);
    const [dq, dk, dv] = [batch.q, batch.k, batch.v].map((x) => new Float32Array(x.length)) as [
      Float32Array,
      Float32Array,
      Float32Array,
    ];
    const { q, k, v, nTokens, seqStarts, heads } = batch;
    attentionBackward(q, k, v, out, lse, dOut, nTokens, seqStarts, heads, dq, dk, dv);
    for (const grad of [dq, dk, dv]) expect(grad.every(Number.isFinite)).toBe(true);
    const expected = refAttentionBackward(q, k, v, dOut, refShape(batch));
    // Gradients here scale with scale·|q| (≈ 160): the same relative error as above.
    expectClose(dq, expected.dq, 1e-2, 1e-3);
    expectClose(dk, expected.dk, 1e-2, 1e-3);
    expectClose(dv, expected.dv, GRAD_ATOL, RTOL);
  });
});

describe("argument checks", () => {
  const native = loadNative();
  const f32 = (n: number) => new Float32Array(n);
  const i32 = (...values: number[]) => Int32Array.from(values);
  const callWith = (fn: (...args: never[]) => void, args: unknown[]) => () =>
    (fn as (...args: unknown[]) => void)(...args);

  /** Valid arguments with one replaced, so each check is hit in isolation. */
  function variant(base: unknown[], index: number, value: unknown): unknown[] {
    const args = base.slice();
    args[index] = value;
    return args;
  }

  // 2 sequences × 2 blocks of 4 slots; 4 query / 2 kv heads, dim 3.
  const [numBlocks, blockSize, kv, dim] = [5, 4, 2, 3];
  const cacheLength = numBlocks * blockSize * kv * dim;
  const writeArgs = (): unknown[] => [
    f32(2 * kv * dim),
    f32(2 * kv * dim),
    2,
    i32(0, 19),
    f32(cacheLength),
    f32(cacheLength),
    numBlocks,
    blockSize,
    kv,
    dim,
  ];
  const pagedArgs = (): unknown[] => [
    f32(2 * 4 * dim),
    2,
    i32(0, 1),
    i32(6, 0),
    i32(3, 1, 4, -1),
    2,
    2,
    f32(cacheLength),
    f32(cacheLength),
    numBlocks,
    blockSize,
    4,
    kv,
    dim,
    0.5,
    f32(2 * 4 * dim),
  ];
  const forwardArgs = (): unknown[] => [
    f32(5 * 4 * dim),
    f32(5 * kv * dim),
    f32(5 * kv * dim),
    5,
    i32(0, 3, 5),
    2,
    4,
    kv,
    dim,
    0.5,
    f32(5 * 4 * dim),
    f32(5 * 4),
  ];
  const backwardArgs = (): unknown[] => [
    f32(5 * 4 * dim),
    f32(5 * kv * dim),
    f32(5 * kv * dim),
    f32(5 * 4 * dim),
    f32(5 * 4),
    f32(5 * 4 * dim),
    5,
    i32(0, 3, 5),
    2,
    4,
    kv,
    dim,
    0.5,
    f32(5 * 4 * dim),
    f32(5 * kv * dim),
    f32(5 * kv * dim),
  ];

  it("accepts the valid argument lists used below", () => {
    expect(callWith(native.cacheWrite, writeArgs())).not.toThrow();
    expect(callWith(native.pagedAttention, pagedArgs())).not.toThrow();
    expect(callWith(native.attentionForward, forwardArgs())).not.toThrow();
    expect(callWith(native.attentionBackward, backwardArgs())).not.toThrow();
  });

  /** The call throws the error type with a message matching `message`. */
  function expectRefusal(call: () => void, type: typeof TypeError, message: RegExp): void {
    expect(call).toThrow(type);
    expect(call).toThrow(message);
  }

  it("cacheWrite refuses wrong lengths, wrong array types and slots outside the cache", () => {
    const call = (i: number, value: unknown) => callWith(native.cacheWrite, variant(writeArgs(), i, value));
    expectRefusal(call(0, f32(5)), RangeError, /^cacheWrite: k has length 5, expected 12$/);
    expectRefusal(call(1, new Float64Array(12)), TypeError, /^cacheWrite: v must be a Float32Array$/);
    expectRefusal(call(3, f32(2)), TypeError, /^cacheWrite: slotMapping must be an? Int32Array$/);
    expectRefusal(
      call(3, i32(0, 20)),
      RangeError,
      /^cacheWrite: slotMapping\[1\] is 20, expected \[-1, 20\)$/,
    );
    expectRefusal(call(3, i32(-2, 0)), RangeError, /^cacheWrite: slotMapping\[0\] is -2/);
    expectRefusal(
      call(5, f32(cacheLength - 1)),
      RangeError,
      /^cacheWrite: valueCache has length 119, expected 120$/,
    );
    expectRefusal(call(9, 0), RangeError, /^cacheWrite: headDim must be in \[1, /);
  });

  it("pagedAttention refuses block ids and positions its block tables cannot serve", () => {
    const call = (i: number, value: unknown) =>
      callWith(native.pagedAttention, variant(pagedArgs(), i, value));
    expectRefusal(
      call(4, i32(3, 5, 4, -1)),
      RangeError,
      /^pagedAttention: blockTables\[0\]\[1\] is 5, expected \[0, 5\)/,
    );
    expectRefusal(call(4, i32(3, 1, -1, -1)), RangeError, /^pagedAttention: blockTables\[1\]\[0\] is -1/);
    expectRefusal(call(3, i32(8, 0)), RangeError, /^pagedAttention: rowPos\[0\] is 8, expected \[0, 8\)$/);
    expectRefusal(call(3, i32(0, -1)), RangeError, /^pagedAttention: rowPos\[1\] is -1/);
    expectRefusal(call(2, i32(0, 2)), RangeError, /^pagedAttention: rowSeq\[1\] is 2, expected \[0, 2\)$/);
  });

  it("pagedAttention refuses wrong shapes, types, head counts, scales and an out that aliases q", () => {
    const call = (i: number, value: unknown) =>
      callWith(native.pagedAttention, variant(pagedArgs(), i, value));
    expectRefusal(
      call(4, i32(3, 1, 4)),
      RangeError,
      /^pagedAttention: blockTables has length 3, expected 4$/,
    );
    expectRefusal(call(0, new Float64Array(24)), TypeError, /^pagedAttention: q must be a Float32Array$/);
    expectRefusal(
      call(11, 3),
      RangeError,
      /^pagedAttention: numHeads \(3\) must be a multiple of numKvHeads \(2\)$/,
    );
    expectRefusal(call(14, Number.NaN), RangeError, /^pagedAttention: scale must be finite/);
    expectRefusal(call(13, 2.5), RangeError, /^pagedAttention: headDim must be an integer/);
    const aliased = pagedArgs();
    aliased[15] = aliased[0];
    expectRefusal(
      callWith(native.pagedAttention, aliased),
      RangeError,
      /^pagedAttention: out must not overlap q$/,
    );
  });

  it("attentionForward refuses seqStarts that do not delimit nTokens in order", () => {
    const call = (i: number, value: unknown) =>
      callWith(native.attentionForward, variant(forwardArgs(), i, value));
    expectRefusal(
      call(4, i32(0, 3, 2, 5)),
      RangeError,
      /^attentionForward: seqStarts has length 4, expected 3$/,
    );
    expectRefusal(call(4, i32(1, 3, 5)), RangeError, /^attentionForward: seqStarts\[0\] is 1, expected 0$/);
    expectRefusal(
      call(4, i32(0, 3, 4)),
      RangeError,
      /^attentionForward: seqStarts\[2\] is 4, expected nTokens = 5$/,
    );
    const decreasing = variant(forwardArgs(), 4, i32(0, 4, 3, 5));
    decreasing[5] = 3;
    expectRefusal(
      callWith(native.attentionForward, decreasing),
      RangeError,
      /^attentionForward: seqStarts\[2\] is 3, less than seqStarts\[1\] = 4/,
    );
  });

  it("attentionForward refuses a wrong lse length, a bad head split and a non-finite scale", () => {
    const call = (i: number, value: unknown) =>
      callWith(native.attentionForward, variant(forwardArgs(), i, value));
    expectRefusal(call(11, f32(19)), RangeError, /^attentionForward: lse has length 19, expected 20$/);
    expectRefusal(
      call(7, 3),
      RangeError,
      /^attentionForward: numHeads \(4\) must be a multiple of numKvHeads \(3\)$/,
    );
    expectRefusal(call(9, Number.POSITIVE_INFINITY), RangeError, /^attentionForward: scale must be finite/);
  });

  it("attentionBackward refuses wrong gradient buffers, a NaN scale, aliasing and missing arguments", () => {
    const call = (i: number, value: unknown) =>
      callWith(native.attentionBackward, variant(backwardArgs(), i, value));
    expectRefusal(call(14, f32(29)), RangeError, /^attentionBackward: dk has length 29, expected 30$/);
    expectRefusal(
      call(13, new Float64Array(60)),
      TypeError,
      /^attentionBackward: dq must be a Float32Array$/,
    );
    expectRefusal(call(12, Number.NaN), RangeError, /^attentionBackward: scale must be finite/);
    expectRefusal(call(7, i32(0, 5, 3)), RangeError, /^attentionBackward: seqStarts\[2\] is 3, less than/);
    const aliased = backwardArgs();
    aliased[15] = aliased[2];
    expectRefusal(
      callWith(native.attentionBackward, aliased),
      RangeError,
      /^attentionBackward: dv must not overlap v$/,
    );
    expectRefusal(
      callWith(native.attentionBackward, backwardArgs().slice(0, 15)),
      TypeError,
      /^attentionBackward: expected 16 arguments, got 15$/,
    );
  });
});
