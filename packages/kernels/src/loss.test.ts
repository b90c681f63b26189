import { describe, expect, it } from "vitest";
import { loadNative } from "./loader.ts";
import { linear } from "./ops/gemm.ts";
import {
  logSoftmaxGather,
  logSoftmaxGatherBackward,
  type UnembedTiles,
  unembedLogprobs,
  unembedLogprobsBackward,
} from "./ops/loss.ts";
import { centralDifferences } from "./reference/elementwise.ts";
import {
  refLogSoftmaxGather,
  refLogSoftmaxGatherBackward,
  refUnembedLogits,
  refUnembedLogprobsBackward,
} from "./reference/loss.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

// Tolerances. logprob = logit − lse, with |lse| up to ~20 here: fp32 rounding of
// the inputs' sums is a few ulps of that (≈ 1e-5 absolute). Gradients are
// differences of probabilities in [0, 1]: ~1e-6 absolute. Reference backward
// against central differences (float64, h = 1e-5): 1e-7.
const FD_TOLERANCE = 1e-7;
const f64 = (v: Float32Array) => Float64Array.from(v);
/** Tiles that split rows and vocabulary unevenly, one entry per tile, and not at all. */
const tileShapes = (n: number, vocab: number): UnembedTiles[] => [
  { rowBlock: 1, vocabBlock: vocab > 1000 ? 997 : 1 },
  { rowBlock: 2, vocabBlock: 7 },
  { rowBlock: n, vocabBlock: 4096 },
  { rowBlock: n + 5, vocabBlock: vocab + 3 },
  {},
];
const randomTargets = (n: number, vocab: number, random: () => number) =>
  Int32Array.from({ length: n }, () => Math.floor(random() * vocab));

describe("logSoftmaxGather", () => {
  const shapes: [number, number][] = [
    [1, 1],
    [1, 3],
    [4, 67],
    [3, 896],
    [33, 5],
    [2, 50000],
  ];

  it("matches the float64 reference on odd vocabularies, one row and a 50k vocabulary", () => {
    const random = rng(21);
    for (const [n, vocab] of shapes) {
      const logits = randomF32(n * vocab, random, 8);
      const targets = randomTargets(n, vocab, random);
      const { logprobs, lse } = logSoftmaxGather(logits, targets, vocab);
      const expected = refLogSoftmaxGather(logits, targets, n, vocab);
      expectClose(lse, expected.lse, 2e-5, 1e-6);
      expectClose(logprobs, expected.logprobs, 2e-5, 1e-6);
    }
  });

  it("large logits neither overflow nor change the logprobs (shift invariance)", () => {
    const random = rng(20);
    const [n, vocab] = [3, 67];
    const logits = randomF32(n * vocab, random, 5);
    const targets = randomTargets(n, vocab, random);
    const shifted = logits.map((v) => v + 1000); // fp32 rounding at 1000: ±3e-5
    const base = logSoftmaxGather(logits, targets, vocab);
    const moved = logSoftmaxGather(shifted, targets, vocab);
    expectClose(moved.logprobs, base.logprobs, 2e-4);
    expectClose(
      moved.lse,
      f64(base.lse).map((v) => v + 1000),
      2e-4,
    );
    expect(logSoftmaxGather(Float32Array.of(3.5), Int32Array.of(0), 1).logprobs[0]).toBe(0);
  });

  it("the reference backward matches central differences in float64", () => {
    const random = rng(22);
    const [n, vocab] = [3, 5];
    const logits = f64(randomF32(n * vocab, random, 3));
    const targets = randomTargets(n, vocab, random);
    const g = f64(randomF32(n, random));
    const loss = (l: Float64Array) => {
      const { logprobs } = refLogSoftmaxGather(l, targets, n, vocab);
      let sum = 0;
      for (let i = 0; i < n; i++) sum += (g[i] as number) * (logprobs[i] as number);
      return sum;
    };
    expectClose(
      refLogSoftmaxGatherBackward(logits, targets, g, n, vocab),
      centralDifferences(loss, logits),
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
  });

  it("the native backward matches the reference and overwrites dLogits", () => {
    const random = rng(23);
    for (const [n, vocab] of shapes) {
      const logits = randomF32(n * vocab, random, 8);
      const targets = randomTargets(n, vocab, random);
      const { lse } = logSoftmaxGather(logits, targets, vocab);
      const g = randomF32(n, random);
      const dLogits = new Float32Array(n * vocab).fill(Number.NaN);
      logSoftmaxGatherBackward(logits, targets, lse, g, vocab, dLogits);
      expectClose(dLogits, refLogSoftmaxGatherBackward(logits, targets, g, n, vocab), 2e-6, 1e-5);
    }
  });

  it("rejects targets out of range and bad buffers with errors naming the op and the argument", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    expect(() => logSoftmaxGather(f(10), Int32Array.of(0, 5), 5)).toThrow(
      new RangeError("logSoftmaxGather: targets[1] is 5, expected [0, 5)"),
    );
    expect(() => logSoftmaxGather(f(10), Int32Array.of(-1, 0), 5)).toThrow(
      new RangeError("logSoftmaxGather: targets[0] is -1, expected [0, 5)"),
    );
    expect(() => logSoftmaxGather(f(9), Int32Array.of(0, 1), 5)).toThrow(
      new RangeError("logSoftmaxGather: logits has length 9, expected 10"),
    );
    expect(() => logSoftmaxGather(f(10), Float64Array.of(0, 1) as never, 5)).toThrow(
      new TypeError("logSoftmaxGather: targets must be a Int32Array"),
    );
    expect(() => logSoftmaxGatherBackward(f(10), Int32Array.of(0, 7), f(2), f(2), 5)).toThrow(
      new RangeError("logSoftmaxGatherBackward: targets[1] is 7, expected [0, 5)"),
    );
    expect(() => logSoftmaxGatherBackward(f(10), Int32Array.of(0, 1), f(2), f(3), 5)).toThrow(
      new RangeError("logSoftmaxGatherBackward: dLogprobs has length 3, expected 2"),
    );
    expect(() => native.logSoftmaxGather(f(10), Int32Array.of(0, 1), f(2), f(2), 2, 0)).toThrow(
      /logSoftmaxGather: vocab must be in \[1,/,
    );
  });
});

describe("unembedLogprobs (fused with the unembedding)", () => {
  it("agrees with unembedding then logSoftmaxGather for any tile shape, and with the reference", () => {
    const random = rng(24);
    for (const [n, d, vocab] of [
      [1, 1, 1],
      [5, 3, 67],
      [7, 67, 896],
      [3, 32, 50000],
    ] as [number, number, number][]) {
      const hidden = randomF32(n * d, random);
      const w = randomF32(vocab * d, random, 0.5);
      const targets = randomTargets(n, vocab, random);
      const logits = new Float32Array(n * vocab);
      linear(hidden, w, logits, n, d, vocab);
      const unfused = logSoftmaxGather(logits, targets, vocab);
      const expected = refLogSoftmaxGather(refUnembedLogits(hidden, w, n, d, vocab), targets, n, vocab);
      for (const tiles of tileShapes(n, vocab)) {
        const fused = unembedLogprobs(hidden, w, targets, d, vocab, tiles);
        expectClose(fused.logprobs, unfused.logprobs, 1e-5, 1e-6);
        expectClose(fused.lse, unfused.lse, 1e-5, 1e-6);
        expectClose(fused.logprobs, expected.logprobs, 2e-5, 1e-5);
      }
      expectClose(unembedLogprobs(hidden, w, targets, d, vocab).logprobs, unfused.logprobs, 1e-5, 1e-6);
    }
  });

  it("the reference backward matches central differences in float64 for hidden and w", () => {
    const random = rng(25);
    const [n, d, vocab] = [2, 3, 4];
    const hidden = f64(randomF32(n * d, random));
    const w = f64(randomF32(vocab * d, random));
    const targets = randomTargets(n, vocab, random);
    const g = f64(randomF32(n, random));
    const loss = (h: Float64Array, wv: Float64Array) => {
      const { logprobs } = refLogSoftmaxGather(refUnembedLogits(h, wv, n, d, vocab), targets, n, vocab);
      return (g[0] as number) * (logprobs[0] as number) + (g[1] as number) * (logprobs[1] as number);
    };
    const { dHidden, dW } = refUnembedLogprobsBackward(hidden, w, targets, g, n, d, vocab);
    expectClose(
      dHidden,
      centralDifferences((h) => loss(h, w), hidden),
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
    expectClose(
      dW,
      centralDifferences((wv) => loss(hidden, wv), w),
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
  });

  it("the native backward accumulates dHidden and dW like the reference, for any tile shape", () => {
    const random = rng(26);
    for (const [n, d, vocab] of [
      [1, 1, 3],
      [6, 5, 67],
      [5, 64, 896],
      [3, 16, 50000],
    ] as [number, number, number][]) {
      const hidden = randomF32(n * d, random);
      const w = randomF32(vocab * d, random, 0.5);
      const targets = randomTargets(n, vocab, random);
      const g = randomF32(n, random);
      const { lse } = unembedLogprobs(hidden, w, targets, d, vocab);
      const expected = refUnembedLogprobsBackward(hidden, w, targets, g, n, d, vocab);
      for (const tiles of tileShapes(n, vocab)) {
        const dHidden0 = randomF32(n * d, random);
        const dW0 = randomF32(vocab * d, random);
        const dHidden = Float32Array.from(dHidden0);
        const dW = Float32Array.from(dW0);
        unembedLogprobsBackward(hidden, w, targets, lse, g, dHidden, dW, d, vocab, tiles);
        expectClose(
          dHidden,
          f64(dHidden0).map((v, i) => v + (expected.dHidden[i] as number)),
          1e-5,
          1e-5,
        );
        expectClose(
          dW,
          f64(dW0).map((v, i) => v + (expected.dW[i] as number)),
          1e-5,
          1e-5,
        );
      }
      // dW null: only the hidden gradient.
      const dHidden = new Float32Array(n * d);
      unembedLogprobsBackward(hidden, w, targets, lse, g, dHidden, null, d, vocab);
      expectClose(dHidden, expected.dHidden, 1e-5, 1e-5);
    }
  });

  it("cross-entropy (−logprob) gradient through the fused op equals the unfused chain", () => {
    const random = rng(27);
    const [n, d, vocab] = [4, 24, 300];
    const hidden = randomF32(n * d, random);
    const w = randomF32(vocab * d, random, 0.5);
    const targets = randomTargets(n, vocab, random);
    const g = new Float32Array(n).fill(-1 / n); // d(mean CE)/dlogprob
    const logits = new Float32Array(n * vocab);
    linear(hidden, w, logits, n, d, vocab);
    const { lse } = logSoftmaxGather(logits, targets, vocab);
    const dLogits = logSoftmaxGatherBackward(logits, targets, lse, g, vocab);
    const chainHidden = new Float32Array(n * d);
    loadNative().gemm(false, false, n, d, vocab, 1, dLogits, w, 0, chainHidden, "auto");
    const fusedHidden = new Float32Array(n * d);
    unembedLogprobsBackward(hidden, w, targets, lse, g, fusedHidden, null, d, vocab, {
      rowBlock: 3,
      vocabBlock: 64,
    });
    expectClose(fusedHidden, chainHidden, 1e-6, 1e-5);
  });

  it("rejects targets out of range and bad buffers with errors naming the op and the argument", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    expect(() => unembedLogprobs(f(6), f(12), Int32Array.of(0, 4), 3, 4)).toThrow(
      new RangeError("unembedLogprobs: targets[1] is 4, expected [0, 4)"),
    );
    expect(() => unembedLogprobs(f(6), f(11), Int32Array.of(0, 1), 3, 4)).toThrow(
      new RangeError("unembedLogprobs: w has length 11, expected 12"),
    );
    expect(() => unembedLogprobs(f(6), f(12), Int32Array.of(0, 1), 3, 4, { rowBlock: 0 })).toThrow(
      /unembedLogprobs: rowBlock must be in \[1,/,
    );
    expect(() => unembedLogprobs(f(6), f(12), Int32Array.of(0, 1), 3, 4, { vocabBlock: 0.5 })).toThrow(
      /unembedLogprobs: vocabBlock must be an integer/,
    );
    expect(() =>
      unembedLogprobsBackward(f(6), f(12), Int32Array.of(0, -2), f(2), f(2), f(6), null, 3, 4),
    ).toThrow(new RangeError("unembedLogprobsBackward: targets[1] is -2, expected [0, 4)"));
    expect(() =>
      unembedLogprobsBackward(f(6), f(12), Int32Array.of(0, 1), f(2), f(2), f(6), f(3), 3, 4),
    ).toThrow(new RangeError("unembedLogprobsBackward: dW has length 3, expected 12"));
    expect(() =>
      native.unembedLogprobsBackward(
        f(6),
        f(12),
        Int32Array.of(0, 1),
        f(2),
        f(2),
        new Float64Array(6) as never,
        null,
        2,
        3,
        4,
        1,
        1,
      ),
    ).toThrow(new TypeError("unembedLogprobsBackward: dHidden must be a Float32Array"));
  });
});
