import type { LossFn, LossFnConfig } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { type DatumLossInputs, emptyTotals, lossAndGrad, lossMetrics } from "./losses.ts";

const config: LossFnConfig = { clipLowThreshold: 0.8, clipHighThreshold: 1.2, beta: 0.05, referenceKl: 0 };

function inputs(weights: number[], oldLogprobs: number[], advantages: number[]): DatumLossInputs {
  return {
    targets: new Int32Array(weights.length),
    weights: Float32Array.from(weights),
    oldLogprobs: Float32Array.from(oldLogprobs),
    advantages: Float32Array.from(advantages),
  };
}

function run(lossFn: LossFn, x: DatumLossInputs, logprobs: number[], cfg: LossFnConfig = config) {
  const totals = emptyTotals();
  const grad = new Float32Array(logprobs.length);
  lossAndGrad(lossFn, cfg, x, Float32Array.from(logprobs), grad, totals);
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

// Tinker's cispo and dro, written out in float64 from their formulas, one token at
// a time. `frozenRatio` is cispo's stop-gradient: the clipped ratio taken at the
// point where the gradient is asked for, held fixed while logp moves.
function referenceTokenLoss(
  lossFn: "cispo" | "dro",
  cfg: LossFnConfig,
  logp: number,
  old: number,
  a: number,
  frozenRatio: number,
): number {
  if (lossFn === "cispo") return -(frozenRatio * logp * a);
  return -(logp * a - 0.5 * cfg.beta * (logp - old) ** 2);
}

const clip = (r: number, cfg: LossFnConfig) =>
  Math.min(Math.max(r, cfg.clipLowThreshold), cfg.clipHighThreshold);

describe("cispo and dro against a float64 reference", () => {
  const cases: [LossFn & ("cispo" | "dro"), LossFnConfig][] = [
    ["cispo", config],
    ["cispo", { ...config, clipLowThreshold: 0.5, clipHighThreshold: 1.05 }],
    ["dro", config],
    ["dro", { ...config, beta: 0.7 }],
  ];
  for (const [lossFn, cfg] of cases) {
    it(`${lossFn} ${JSON.stringify(cfg)}: loss, gradient and finite differences agree`, () => {
      const rng = new Rng(lossFn === "cispo" ? 5 : 6);
      const n = 64;
      // Drifts of ±1 put many cispo ratios outside the clip range on both sides.
      const old = Array.from({ length: n }, () => -0.1 - 3 * rng.next());
      const logp = old.map((o) => Math.min(-1e-3, o + rng.uniform(1)));
      const adv = Array.from({ length: n }, () => rng.uniform(2));
      const mask = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? 0 : 1));
      // The reference reads the same float32-rounded values the engine sees.
      const f = (v: number[]) => Array.from(Float32Array.from(v));
      const [lp, o, a] = [f(logp), f(old), f(adv)];
      const { grad, metrics } = run(lossFn, inputs(mask, o, a), lp, cfg);

      let loss = 0;
      let clipped = 0;
      let tokens = 0;
      const h = 1e-6;
      for (let t = 0; t < n; t++) {
        if (!mask[t]) {
          expect(grad[t]).toBe(0);
          continue;
        }
        tokens++;
        const [x, x0, at] = [lp[t] as number, o[t] as number, a[t] as number];
        const ratio = Math.exp(x - x0);
        if (clip(ratio, cfg) !== ratio) clipped++;
        const frozen = clip(ratio, cfg);
        loss += referenceTokenLoss(lossFn, cfg, x, x0, at, frozen);
        const fd =
          (referenceTokenLoss(lossFn, cfg, x + h, x0, at, frozen) -
            referenceTokenLoss(lossFn, cfg, x - h, x0, at, frozen)) /
          (2 * h);
        expect(Math.abs((grad[t] as number) - fd), `token ${t}: grad ${grad[t]}, fd ${fd}`).toBeLessThan(
          1e-5 * (1 + Math.abs(fd)),
        );
      }
      expect(Math.abs((metrics["loss:sum"] as number) - loss)).toBeLessThan(1e-9 * (1 + Math.abs(loss)));
      expect(metrics["tokens:sum"]).toBe(tokens);
      if (lossFn === "cispo") {
        expect(clipped).toBeGreaterThan(5);
        expect(metrics["clipfrac:mean"]).toBeCloseTo(clipped / tokens, 12);
      }
    });
  }

  it("cispo keeps a gradient on clipped tokens where ppo has none", () => {
    // r = 1.5 with A = 1: ppo's clipped branch (no gradient); cispo weights by clip(r) = 1.2.
    const x = inputs([1], [0], [1]);
    expect(run("ppo", x, [Math.log(1.5)]).grad[0]).toBe(0);
    const c = run("cispo", x, [Math.log(1.5)]);
    expect(c.grad[0]).toBeCloseTo(-1.2, 6);
    expect(c.metrics["loss:sum"]).toBeCloseTo(-1.2 * Math.log(1.5), 6);
  });

  it("dro with beta 0 is plain −Σ logp·A; its penalty pulls logp back to the sampler's", () => {
    const x = inputs([0, 1], [0, -2], [0, 1]);
    const free = run("dro", x, [0, -1], { ...config, beta: 0 });
    expect(free.metrics["loss:sum"]).toBeCloseTo(1, 6);
    expect(free.grad).toEqual([0, -1]);
    // No advantage: the gradient is β·(logp − logp_old) > 0, lowering logp back toward −2.
    const pulled = run("dro", inputs([0, 1], [0, -2], [0, 0]), [0, -1], { ...config, beta: 0.5 });
    expect(pulled.grad[1]).toBeCloseTo(0.5, 6);
    expect(pulled.metrics["loss:sum"]).toBeCloseTo(0.25, 6);
  });
});
