import { describe, expect, it } from "vitest";
import { type DatumLossInputs, emptyTotals, lossAndGrad, lossMetrics } from "./losses.ts";

const config = { clipLowThreshold: 0.8, clipHighThreshold: 1.2 };

function inputs(weights: number[], oldLogprobs: number[], advantages: number[]): DatumLossInputs {
  return {
    targets: new Int32Array(weights.length),
    weights: Float32Array.from(weights),
    oldLogprobs: Float32Array.from(oldLogprobs),
    advantages: Float32Array.from(advantages),
  };
}

function run(
  lossFn: "cross_entropy" | "importance_sampling" | "ppo",
  x: DatumLossInputs,
  logprobs: number[],
) {
  const totals = emptyTotals();
  const grad = new Float32Array(logprobs.length);
  lossAndGrad(lossFn, config, x, Float32Array.from(logprobs), grad, totals);
  return { grad: Array.from(grad), metrics: lossMetrics(lossFn, totals) };
}

describe("losses on hand-computed cases", () => {
  it("cross_entropy = −Σ w·logp, gradient −w", () => {
    const { grad, metrics } = run("cross_entropy", inputs([0, 1, 2], [0, 0, 0], [0, 0, 0]), [-1, -2, -0.5]);
    expect(metrics["loss:sum"]).toBeCloseTo(2 + 1, 6);
    expect(metrics["weight:sum"]).toBe(3);
    expect(grad).toEqual([0, -1, -2]);
  });

  it("importance_sampling = −Σ r·A with r = exp(logp − logp_old), gradient −r·A", () => {
    // r = e^{0.1} on the first action, e^{-0.2} on the second.
    const { grad, metrics } = run(
      "importance_sampling",
      inputs([0, 1, 1], [0, -1, -1], [5, 2, -1]),
      [0, -0.9, -1.2],
    );
    const r1 = Math.exp(0.1);
    const r2 = Math.exp(-0.2);
    expect(metrics["loss:sum"]).toBeCloseTo(-(r1 * 2 + r2 * -1), 5);
    expect(metrics["ratio:mean"]).toBeCloseTo((r1 + r2) / 2, 6);
    expect(grad[1]).toBeCloseTo(-r1 * 2, 5);
    expect(grad[2]).toBeCloseTo(r2, 5);
    expect(grad[0]).toBe(0);
  });

  it("ppo takes min(r·A, clip(r)·A): no gradient where the clipped term is the smaller", () => {
    // r = 1.5 with A = 1: clipped to 1.2 (clipped branch, no gradient).
    // r = 0.5 with A = 1: the unclipped 0.5 is smaller (gradient −r).
    // r = 0.5 with A = −1: clipped −0.8 is smaller (no gradient).
    // r = 1.0 with A = 3: inside the range (gradient −3).
    const lp = [Math.log(1.5), Math.log(0.5), Math.log(0.5), 0];
    const { grad, metrics } = run("ppo", inputs([1, 1, 1, 1], [0, 0, 0, 0], [1, 1, -1, 3]), lp);
    expect(metrics["loss:sum"]).toBeCloseTo(-(1.2 + 0.5 - 0.8 + 3), 5);
    expect(metrics["clipfrac:mean"]).toBeCloseTo(3 / 4, 6);
    expect(grad[0]).toBe(0);
    expect(grad[1]).toBeCloseTo(-0.5, 6);
    expect(grad[2]).toBe(0);
    expect(grad[3]).toBeCloseTo(-3, 6);
  });

  it("a zero advantage inside the mask is still an action token: counted in the ratio statistics", () => {
    const { metrics } = run("ppo", inputs([0, 1, 1], [0, 0, 0], [0, 0, 0]), [0, Math.log(2), 0]);
    expect(metrics["tokens:sum"]).toBe(2);
    expect(metrics["ratio:mean"]).toBeCloseTo(1.5, 6);
    expect(metrics["clipfrac:mean"]).toBeCloseTo(0.5, 6);
  });

  it("a non-zero advantage outside the mask changes nothing", () => {
    const a = run("importance_sampling", inputs([0, 1], [0, -1], [0, 1]), [-3, -1]);
    const b = run("importance_sampling", inputs([0, 1], [0, -1], [100, 1]), [-3, -1]);
    expect(b).toEqual(a);
  });
});
