import { describe, expect, it } from "vitest";
import { loadNative } from "./loader.ts";
import { adamwStep, gradNorm, sumOfSquares } from "./ops/optim.ts";
import { refAdamwStep, refSumOfSquares } from "./reference/optim.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

const hyper = { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };

describe("adamwStep", () => {
  it("reproduces a hand-computed two-step example (decoupled decay, bias correction)", () => {
    // lr 0.1, β 0.9 / 0.999, eps 1e-8, weight decay 0.01 (p is first scaled by 1 − 0.1·0.01 = 0.999).
    // Element 0: p = 1, grads 0.5 then 0.25.
    //   step 1: m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25 → p = 0.999 − 0.1·0.5/(0.5 + 1e-8) = 0.899000002
    //   step 2: m = 0.9·0.05 + 0.1·0.25 = 0.07, v = 0.999·0.00025 + 0.001·0.0625 = 0.00031225,
    //           m̂ = 0.07/0.19 = 0.3684211, v̂ = 0.00031225/0.001999 = 0.1562031, √v̂ = 0.3952254
    //           → p = 0.899000002·0.999 − 0.1·0.3684211/0.3952254 = 0.8981010 − 0.0932181 = 0.8048830
    // Element 1: p = −0.5, grads −1 then 2.
    //   step 1: p = −0.4995 + 0.1 = −0.3995 (to 1e-9)
    //   step 2: m = −0.09 + 0.2 = 0.11, v = 0.000999 + 0.004 = 0.004999, m̂ = 0.5789474,
    //           √v̂ = √2.5007504 = 1.5813761 → p = −0.3991005 − 0.0366104 = −0.4357109
    const param = Float32Array.of(1, -0.5);
    const m = new Float32Array(2);
    const v = new Float32Array(2);
    const { lr, beta1, beta2, eps, weightDecay } = hyper;
    adamwStep(param, Float32Array.of(0.5, -1), m, v, lr, beta1, beta2, eps, weightDecay, 1);
    // fp32 results: within a couple of ulps (rtol 2e-7) of the exact values.
    expectClose(param, [0.899000002, -0.399500001], 0, 2e-7);
    expectClose(m, [0.05, -0.1], 0, 2e-7);
    expectClose(v, [0.00025, 0.001], 0, 2e-7);
    adamwStep(param, Float32Array.of(0.25, 2), m, v, lr, beta1, beta2, eps, weightDecay, 2);
    expectClose(param, [0.804883, -0.4357109], 1e-6); // the hand values above have 7 digits
    expectClose(m, [0.07, 0.11], 0, 4e-7);
    expectClose(v, [0.00031225, 0.004999], 0, 4e-7);
  });

  it("matches the float64 reference over three steps on odd sizes", () => {
    const random = rng(31);
    for (const count of [1, 3, 67, 896, 100003]) {
      const param = randomF32(count, random);
      const m = new Float32Array(count);
      const v = new Float32Array(count);
      let expected: ReturnType<typeof refAdamwStep> = {
        param: Float64Array.from(param),
        m: new Float64Array(count),
        v: new Float64Array(count),
      };
      for (let step = 1; step <= 3; step++) {
        const grad = randomF32(count, random, 3);
        const h = { ...hyper, lr: 1e-3, step, gradScale: 0.7 };
        adamwStep(param, grad, m, v, h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, step, h.gradScale);
        expected = refAdamwStep(expected.param, grad, expected.m, expected.v, h);
      }
      expectClose(param, expected.param, 1e-6, 1e-6);
      expectClose(m, expected.m, 1e-6, 1e-5);
      expectClose(v, expected.v, 1e-7, 1e-5);
    }
  });

  it("gradScale multiplies the gradient before the moments (global-norm clipping)", () => {
    const random = rng(32);
    const count = 37;
    const grad = randomF32(count, random);
    const a = {
      param: randomF32(count, random),
      m: randomF32(count, random),
      v: randomF32(count, random, 0.1).map(Math.abs),
    };
    const b = { param: Float32Array.from(a.param), m: Float32Array.from(a.m), v: Float32Array.from(a.v) };
    adamwStep(a.param, grad, a.m, a.v, 0.01, 0.9, 0.95, 1e-8, 0.1, 5, 0.25);
    adamwStep(
      b.param,
      grad.map((g) => g * 0.25),
      b.m,
      b.v,
      0.01,
      0.9,
      0.95,
      1e-8,
      0.1,
      5,
      1,
    );
    expectClose(a.param, b.param, 1e-7);
    expectClose(a.m, b.m, 1e-8);
    expectClose(a.v, b.v, 1e-9);
  });

  it("lr 0 leaves the parameters unchanged but still updates the moments", () => {
    const param = Float32Array.of(1, 2, 3);
    const m = new Float32Array(3);
    const v = new Float32Array(3);
    adamwStep(param, Float32Array.of(1, 1, 1), m, v, 0, 0.9, 0.999, 1e-8, 0.5, 1);
    expect(Array.from(param)).toEqual([1, 2, 3]);
    expectClose(m, [0.1, 0.1, 0.1], 1e-8);
  });

  it("rejects NaN and out-of-range hyperparameters, naming them, and changes nothing", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    const param = Float32Array.of(1, 2);
    const m = Float32Array.of(0.5, 0.5);
    const v = Float32Array.of(0.25, 0.25);
    const call = (overrides: Partial<Record<string, number>>) => () => {
      const h = {
        lr: 0.1,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weightDecay: 0,
        step: 1,
        gradScale: 1,
        ...overrides,
      };
      native.adamwStep(param, f(2), m, v, h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, h.step, h.gradScale);
    };
    expect(call({ lr: Number.NaN })).toThrow(/^adamwStep: lr must be finite/);
    expect(call({ beta1: Number.NaN })).toThrow(/adamwStep: beta1 must be finite/);
    expect(call({ beta2: Number.NaN })).toThrow(/adamwStep: beta2 must be finite/);
    expect(call({ eps: Number.NaN })).toThrow(/adamwStep: eps must be finite/);
    expect(call({ weightDecay: Number.NaN })).toThrow(/adamwStep: weightDecay must be finite/);
    expect(call({ gradScale: Number.NaN })).toThrow(/adamwStep: gradScale must be finite/);
    expect(call({ lr: Number.POSITIVE_INFINITY })).toThrow(/adamwStep: lr must be finite/);
    expect(call({ lr: -0.1 })).toThrow(/adamwStep: lr must be >= 0/);
    expect(call({ beta1: 1 })).toThrow(/adamwStep: beta1 must be in \[0\.0+, 1\.0+\)/);
    expect(call({ beta2: -0.1 })).toThrow(/adamwStep: beta2 must be in \[0/);
    expect(call({ eps: -1e-8 })).toThrow(/adamwStep: eps must be >= 0/);
    expect(call({ weightDecay: -1 })).toThrow(/adamwStep: weightDecay must be >= 0/);
    expect(call({ step: 0 })).toThrow(/adamwStep: step must be in \[1,/);
    expect(call({ step: 1.5 })).toThrow(/adamwStep: step must be an integer/);
    expect(call({ step: Number.NaN })).toThrow(/adamwStep: step must be an integer/);
    for (const error of [call({ lr: Number.NaN }), call({ step: 0 })]) expect(error).toThrow(RangeError);
    expect(Array.from(param)).toEqual([1, 2]);
    expect(Array.from(m)).toEqual([0.5, 0.5]);
    expect(Array.from(v)).toEqual([0.25, 0.25]);
  });

  it("rejects buffers of the wrong length or type, naming them", () => {
    const f = (n: number) => new Float32Array(n);
    expect(() => adamwStep(f(3), f(2), f(3), f(3), 0.1, 0.9, 0.999, 1e-8, 0, 1)).toThrow(
      new RangeError("adamwStep: grad has length 2, expected 3"),
    );
    expect(() => adamwStep(f(3), f(3), f(3), f(4), 0.1, 0.9, 0.999, 1e-8, 0, 1)).toThrow(
      new RangeError("adamwStep: v has length 4, expected 3"),
    );
    expect(() =>
      adamwStep(f(3), f(3), new Float64Array(3) as never, f(3), 0.1, 0.9, 0.999, 1e-8, 0, 1),
    ).toThrow(new TypeError("adamwStep: m must be a Float32Array"));
  });
});

describe("sumOfSquares and gradNorm", () => {
  it("matches the float64 reference over many buffers of odd and empty sizes", () => {
    const random = rng(33);
    const buffers = [1, 0, 3, 67, 896, 70001].map((n) => randomF32(n, random, 2));
    expect(sumOfSquares(buffers)).toBeCloseTo(refSumOfSquares(buffers), 8);
    expect(gradNorm(buffers)).toBeCloseTo(Math.sqrt(refSumOfSquares(buffers)), 10);
    expect(sumOfSquares([])).toBe(0);
  });

  it("accumulates in float64: small squares are not lost next to a large one", () => {
    // In fp32, 1e8 + 1 rounds back to 1e8 (an ulp there is 8); float64 keeps every 1.
    const buffer = new Float32Array(1001).fill(1);
    buffer[0] = 1e4;
    expect(sumOfSquares([buffer])).toBe(1e8 + 1000);
  });

  it("rejects anything but an array of Float32Array, naming the entry", () => {
    const native = loadNative();
    expect(() => native.sumOfSquares(new Float32Array(3) as never)).toThrow(
      new TypeError("sumOfSquares: buffers must be an array of Float32Array"),
    );
    expect(() => sumOfSquares([new Float32Array(2), new Float64Array(2) as never])).toThrow(
      new TypeError("sumOfSquares: buffers[1] must be a Float32Array"),
    );
  });
});
