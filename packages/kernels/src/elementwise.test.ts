import { describe, expect, it } from "vitest";
import { loadNative } from "./loader.ts";
import {
  addBias,
  addInPlace,
  embedding,
  embeddingBackward,
  rmsNorm,
  rmsNormBackward,
  rope,
  ropeBackward,
  swiglu,
  swigluBackward,
} from "./ops/elementwise.ts";
import {
  centralDifferences,
  refEmbedding,
  refEmbeddingBackward,
  refRmsNorm,
  refRmsNormBackward,
  refRope,
  refSwiglu,
  refSwigluBackward,
} from "./reference/elementwise.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

// Tolerances. Native fp32 against the float64 reference: a few fp32 ulps of the
// O(1) values involved (sums over d add ~sqrt(d)·eps). Reference backward against
// central differences (h = 1e-5, float64): truncation error O(h²) ≈ 1e-10 times the
// third derivative, plus rounding 1e-16 / h ≈ 1e-11; 1e-7 leaves a wide margin.
const FD_TOLERANCE = 1e-7;

/** Unscaled rotary frequencies θ^(−2k/headDim), θ = 10000, over the whole head. */
const defaultFrequencies = (headDim: number) => ({
  invFreq: Float32Array.from({ length: headDim / 2 }, (_, k) => 10000 ** ((-2 * k) / headDim)),
  attentionScaling: 1,
});
const f64 = (v: Float32Array) => Float64Array.from(v);
const dotProduct = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
};

describe("rmsNorm", () => {
  const shapes: [number, number][] = [
    [1, 1],
    [1, 3],
    [4, 1],
    [5, 67],
    [17, 896],
    [64, 3],
  ];

  it("matches the float64 reference on odd widths, one row and many rows, and saves invRms", () => {
    const random = rng(1);
    for (const [n, d] of shapes) {
      const x = randomF32(n * d, random, 2);
      const w = randomF32(d, random);
      const out = new Float32Array(n * d).fill(Number.NaN);
      const invRms = new Float32Array(n);
      rmsNorm(x, w, out, invRms, n, d, 1e-6);
      const expected = refRmsNorm(x, w, n, d, 1e-6);
      expectClose(out, expected.out, 1e-5, 1e-5);
      expectClose(invRms, expected.invRms, 0, 1e-5);
    }
  });

  it("eps keeps an all-zero row finite", () => {
    const out = new Float32Array(4);
    rmsNorm(new Float32Array(4), new Float32Array([1, 2, 3, 4]), out, null, 1, 4, 1e-5);
    expect(Array.from(out)).toEqual([0, 0, 0, 0]);
  });

  it("the reference backward matches central differences in float64", () => {
    const random = rng(2);
    for (const [n, d] of [
      [1, 1],
      [3, 5],
      [2, 8],
    ] as [number, number][]) {
      const x = f64(randomF32(n * d, random));
      const w = f64(randomF32(d, random));
      const dOut = f64(randomF32(n * d, random));
      const eps = 1e-3;
      const loss = (xv: Float64Array, wv: Float64Array) =>
        dotProduct(dOut, refRmsNorm(xv, wv, n, d, eps).out);
      const { dx, dWeight } = refRmsNormBackward(dOut, x, w, n, d, eps);
      expectClose(
        dx,
        centralDifferences((xv) => loss(xv, w), x),
        FD_TOLERANCE,
        FD_TOLERANCE,
      );
      expectClose(
        dWeight,
        centralDifferences((wv) => loss(x, wv), w),
        FD_TOLERANCE,
        FD_TOLERANCE,
      );
    }
  });

  it("the native backward matches the reference: dx overwritten or accumulated, dWeight accumulated", () => {
    const random = rng(3);
    for (const [n, d] of shapes) {
      const x = randomF32(n * d, random, 2);
      const w = randomF32(d, random);
      const dOut = randomF32(n * d, random);
      const invRms = new Float32Array(n);
      rmsNorm(x, w, new Float32Array(n * d), invRms, n, d, 1e-6);
      const expected = refRmsNormBackward(dOut, x, w, n, d, 1e-6);
      const tol = 2e-6 * Math.sqrt(d) + 1e-5;

      const dx = new Float32Array(n * d).fill(Number.NaN);
      const dWeight = randomF32(d, random);
      const expectedDWeight = f64(dWeight).map((v, k) => v + (expected.dWeight[k] as number));
      rmsNormBackward(dOut, x, w, invRms, dx, dWeight, n, d, 1e-6);
      expectClose(dx, expected.dx, tol, 1e-4);
      expectClose(dWeight, expectedDWeight, tol * Math.sqrt(n), 1e-4);

      const residual = randomF32(n * d, random);
      const accumulated = Float32Array.from(residual);
      rmsNormBackward(dOut, x, w, null, accumulated, null, n, d, 1e-6, true);
      expectClose(
        accumulated,
        f64(residual).map((v, i) => v + (expected.dx[i] as number)),
        tol,
        1e-4,
      );
    }
  });

  it("rejects bad input with errors naming the op and the argument", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    expect(() => rmsNorm(f(5), f(3), f(6), null, 2, 3, 1e-6)).toThrow(
      new RangeError("rmsNorm: x has length 5, expected 6"),
    );
    expect(() => rmsNorm(f(6), f(2), f(6), null, 2, 3, 1e-6)).toThrow(
      new RangeError("rmsNorm: weight has length 2, expected 3"),
    );
    expect(() => rmsNorm(f(6), f(3), f(6), f(3), 2, 3, 1e-6)).toThrow(
      new RangeError("rmsNorm: invRms has length 3, expected 2"),
    );
    expect(() => rmsNorm(new Float64Array(6) as never, f(3), f(6), null, 2, 3, 1e-6)).toThrow(
      new TypeError("rmsNorm: x must be a Float32Array"),
    );
    expect(() => rmsNorm(f(6), f(3), f(6), null, 2, 3, 0)).toThrow(/rmsNorm: eps must be > 0/);
    expect(() => rmsNorm(f(6), f(3), f(6), null, 2, 3, Number.NaN)).toThrow(/rmsNorm: eps must be finite/);
    expect(() => rmsNorm(f(0), f(0), f(0), null, 0, 0, 1e-6)).toThrow(/rmsNorm: d must be in \[1,/);
    expect(() => rmsNormBackward(f(6), f(6), f(3), null, f(5), null, 2, 3, 1e-6)).toThrow(
      new RangeError("rmsNormBackward: dx has length 5, expected 6"),
    );
    expect(() => rmsNormBackward(f(6), f(6), f(3), null, f(6), f(4), 2, 3, 1e-6)).toThrow(
      new RangeError("rmsNormBackward: dWeight has length 4, expected 3"),
    );
    expect(() => Reflect.apply(native.rmsNormBackward, native, [f(6)])).toThrow(
      /rmsNormBackward: expected 10 arguments/,
    );
  });
});

describe("rope", () => {
  it("matches the reference on odd head counts, one row and large positions, with attention scaling", () => {
    const random = rng(4);
    const cases: [number, number, number, number][] = [
      // n, heads, headDim, rotary half
      [1, 1, 2, 1],
      [7, 3, 64, 32],
      [5, 2, 16, 4], // partial rotary: the last 8 dims of each head pass through
      [33, 1, 128, 64],
    ];
    for (const [n, heads, headDim, half] of cases) {
      const x = randomF32(n * heads * headDim, random);
      const positions = Int32Array.from({ length: n }, () => Math.floor(random() * 40000));
      const invFreq = Float32Array.from({ length: half }, (_, k) => 10000 ** ((-2 * k) / (2 * half)));
      for (const inverse of [false, true]) {
        const actual = Float32Array.from(x);
        loadNative().rope(actual, positions, invFreq, n, heads, headDim, 1.25, inverse);
        expectClose(actual, refRope(x, positions, invFreq, n, heads, headDim, 1.25, inverse), 1e-5, 1e-5);
      }
    }
  });

  it("follows Hugging Face's q·cos + rotate_half(q)·sin with cos = cat(freqs, freqs)", () => {
    const headDim = 8;
    const x = Float32Array.from({ length: headDim }, (_, k) => k + 1);
    const { invFreq, attentionScaling } = defaultFrequencies(headDim);
    const position = 3;
    const actual = Float32Array.from(x);
    rope(actual, Int32Array.of(position), { invFreq, attentionScaling }, 1, 1, headDim);
    const half = headDim / 2;
    const freqs = [...invFreq, ...invFreq].map((f) => f * position);
    const rotated = [...Array.from(x.subarray(half), (v) => -v), ...x.subarray(0, half)];
    const expected = Array.from(
      x,
      (q, k) => q * Math.cos(freqs[k] as number) + (rotated[k] as number) * Math.sin(freqs[k] as number),
    );
    expectClose(actual, expected, 1e-6, 1e-6);
  });

  it("the reference backward (rotation by −θ) matches central differences in float64", () => {
    const random = rng(5);
    const [n, heads, headDim] = [3, 2, 6];
    const positions = Int32Array.of(0, 5, 1234);
    const invFreq = Float64Array.of(1, 0.1, 0.01);
    const dOut = f64(randomF32(n * heads * headDim, random));
    const x = f64(randomF32(n * heads * headDim, random));
    const scale = 1.3;
    const numeric = centralDifferences(
      (xv) => dotProduct(dOut, refRope(xv, positions, invFreq, n, heads, headDim, scale, false)),
      x,
    );
    expectClose(
      refRope(dOut, positions, invFreq, n, heads, headDim, scale, true),
      numeric,
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
  });

  it("ropeBackward is the exact transpose of rope, and undoes it when attentionScaling is 1", () => {
    const random = rng(6);
    const [n, heads, headDim] = [9, 4, 64];
    const positions = Int32Array.from({ length: n }, (_, i) => i * 517);
    const freqs = defaultFrequencies(headDim);
    const scaled = { invFreq: freqs.invFreq, attentionScaling: 1.2 };
    const x = randomF32(n * heads * headDim, random);
    const y = randomF32(n * heads * headDim, random);
    const rx = Float32Array.from(x);
    rope(rx, positions, scaled, n, heads, headDim);
    const rty = Float32Array.from(y);
    ropeBackward(rty, positions, scaled, n, heads, headDim);
    expect(Math.abs(dotProduct(rx, y) - dotProduct(x, rty))).toBeLessThan(1e-4);

    const roundTrip = Float32Array.from(x);
    rope(roundTrip, positions, freqs, n, heads, headDim);
    ropeBackward(roundTrip, positions, freqs, n, heads, headDim);
    expectClose(roundTrip, x, 1e-6);
  });

  it("rejects bad input with errors naming the op and the argument", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    const positions = Int32Array.of(0, 1);
    expect(() => native.rope(f(12), positions, f(1), 2, 2, 3, 1, false)).toThrow(
      new RangeError("rope: headDim must be even, got 3"),
    );
    expect(() => native.rope(f(16), positions, f(3), 2, 2, 4, 1, false)).toThrow(
      new RangeError("rope: invFreq has length 3, expected 1 to headDim / 2 = 2"),
    );
    expect(() => native.rope(f(15), positions, f(2), 2, 2, 4, 1, false)).toThrow(
      new RangeError("rope: x has length 15, expected 16"),
    );
    expect(() => native.rope(f(16), Int32Array.of(0, -1), f(2), 2, 2, 4, 1, false)).toThrow(
      /rope: positions\[1\] is -1, expected \[0, /,
    );
    expect(() => native.rope(f(16), Float32Array.of(0, 1) as never, f(2), 2, 2, 4, 1, false)).toThrow(
      new TypeError("rope: positions must be a Int32Array"),
    );
    expect(() => native.rope(f(16), positions, f(2), 2, 2, 4, Number.POSITIVE_INFINITY, false)).toThrow(
      /rope: attentionScaling must be finite/,
    );
  });
});

describe("swiglu", () => {
  it("matches the float64 reference on odd sizes, including saturated gates", () => {
    const random = rng(7);
    for (const count of [1, 3, 67, 896, 5 * 896 + 3]) {
      const gate = randomF32(count, random, 12);
      const up = randomF32(count, random, 2);
      const out = new Float32Array(count);
      swiglu(gate, up, out);
      expectClose(out, refSwiglu(gate, up), 1e-6, 1e-6);
    }
  });

  it("the reference backward matches central differences in float64", () => {
    const random = rng(8);
    const gate = f64(randomF32(7, random, 4));
    const up = f64(randomF32(7, random, 2));
    const dOut = f64(randomF32(7, random));
    const { dGate, dUp } = refSwigluBackward(dOut, gate, up);
    expectClose(
      dGate,
      centralDifferences((g) => dotProduct(dOut, refSwiglu(g, up)), gate),
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
    expectClose(
      dUp,
      centralDifferences((u) => dotProduct(dOut, refSwiglu(gate, u)), up),
      FD_TOLERANCE,
      FD_TOLERANCE,
    );
  });

  it("the native backward matches the reference and overwrites both gradients", () => {
    const random = rng(9);
    for (const count of [1, 3, 67, 896 * 3 + 5]) {
      const gate = randomF32(count, random, 12);
      const up = randomF32(count, random, 2);
      const dOut = randomF32(count, random);
      const dGate = new Float32Array(count).fill(Number.NaN);
      const dUp = new Float32Array(count).fill(Number.NaN);
      swigluBackward(dOut, gate, up, dGate, dUp);
      const expected = refSwigluBackward(dOut, gate, up);
      expectClose(dGate, expected.dGate, 1e-6, 1e-5);
      expectClose(dUp, expected.dUp, 1e-6, 1e-5);
    }
  });

  it("rejects bad input with errors naming the op and the argument", () => {
    const f = (n: number) => new Float32Array(n);
    expect(() => swiglu(f(4), f(3), f(4))).toThrow(new RangeError("swiglu: up has length 3, expected 4"));
    expect(() => swiglu(f(4), f(4), new Float64Array(4) as never)).toThrow(
      new TypeError("swiglu: out must be a Float32Array"),
    );
    expect(() => swigluBackward(f(4), f(4), f(4), f(4), f(5))).toThrow(
      new RangeError("swigluBackward: dUp has length 5, expected 4"),
    );
  });
});

describe("embedding", () => {
  it("gathers rows of the table for odd widths", () => {
    const random = rng(10);
    for (const d of [1, 3, 67, 896]) {
      const vocab = 11;
      const table = randomF32(vocab * d, random);
      const ids = Int32Array.of(3, 0, 10, 3, 7);
      const out = new Float32Array(ids.length * d);
      embedding(ids, table, out, ids.length, vocab, d);
      expectClose(out, refEmbedding(ids, table, d), 0);
    }
  });

  it("the scatter-add backward sums repeated ids without races and adds onto dTable", () => {
    const random = rng(11);
    for (const d of [1, 3, 67, 896]) {
      const [vocab, n] = [13, 400];
      const ids = Int32Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 5 : Math.floor(random() * vocab)));
      const dOut = randomF32(n * d, random);
      const dTable = randomF32(vocab * d, random);
      const expected = refEmbeddingBackward(ids, dOut, vocab, d).map((v, i) => v + (dTable[i] as number));
      embeddingBackward(ids, dOut, dTable, n, vocab, d);
      expectClose(dTable, expected, 1e-5, 1e-6);
      // Deterministic: a second run over fresh buffers gives identical bits.
      const again = Float32Array.from(dTable);
      const other = Float32Array.from(dTable);
      embeddingBackward(ids, dOut, again, n, vocab, d);
      embeddingBackward(ids, dOut, other, n, vocab, d);
      expect(again).toEqual(other);
    }
  });

  it("range-checks ids and names the op and the argument", () => {
    const f = (n: number) => new Float32Array(n);
    expect(() => embedding(Int32Array.of(0, 4, 2), f(8), f(6), 3, 4, 2)).toThrow(
      new RangeError("embedding: ids[1] is 4, expected [0, 4)"),
    );
    expect(() => embedding(Int32Array.of(-1), f(8), f(2), 1, 4, 2)).toThrow(
      new RangeError("embedding: ids[0] is -1, expected [0, 4)"),
    );
    expect(() => embeddingBackward(Int32Array.of(0, 9), f(4), f(8), 2, 4, 2)).toThrow(
      new RangeError("embeddingBackward: ids[1] is 9, expected [0, 4)"),
    );
    expect(() => embedding(Int32Array.of(0), f(7), f(2), 1, 4, 2)).toThrow(
      new RangeError("embedding: table has length 7, expected 8"),
    );
    expect(() => embeddingBackward(new Uint32Array(1) as never, f(2), f(8), 1, 4, 2)).toThrow(
      new TypeError("embeddingBackward: ids must be a Int32Array"),
    );
  });
});

describe("addInPlace and addBias", () => {
  it("give the bits of a plain loop, on lengths past the vector width and the pool's grain", () => {
    const random = rng(41);
    for (const count of [1, 7, 8, 9, 100_003]) {
      const target = randomF32(count, random);
      const source = randomF32(count, random);
      const expected = target.map((x, i) => x + (source[i] as number));
      addInPlace(target, source);
      expect(target).toEqual(expected);
    }
    for (const [rows, d] of [
      [1, 1],
      [3, 17],
      [5000, 33],
    ] as const) {
      const y = randomF32(rows * d, random);
      const bias = randomF32(d, random);
      const expected = y.map((x, i) => x + (bias[i % d] as number));
      addBias(y, bias, rows, d);
      expect(y).toEqual(expected);
    }
  });

  it("adds an array to itself, and refuses a shifted view of it, wrong lengths and shapes", () => {
    const x = Float32Array.of(1, 2, 3);
    addInPlace(x, x);
    expect(x).toEqual(Float32Array.of(2, 4, 6));
    const buffer = new Float32Array(8);
    expect(() => addInPlace(buffer.subarray(0, 4), buffer.subarray(2, 6))).toThrow(
      new RangeError("addInPlace: source must not overlap target (other than being it)"),
    );
    addInPlace(buffer.subarray(0, 4), buffer.subarray(4, 8)); // views side by side are fine
    const f = (n: number) => new Float32Array(n);
    expect(() => addInPlace(f(4), f(3))).toThrow(
      new RangeError("addInPlace: source has length 3, expected 4"),
    );
    expect(() => addBias(f(6), f(3), 3, 3)).toThrow(new RangeError("addBias: y has length 6, expected 9"));
    expect(() => addBias(f(6), f(2), 2, 3)).toThrow(new RangeError("addBias: bias has length 2, expected 3"));
    expect(() => addBias(f(0), f(0), 0, 0)).toThrow(RangeError);
  });
});
