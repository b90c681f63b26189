// lossFnConfig.referenceKl: a full-vocabulary KL(π_base ‖ π) at every position
// of each datum, prompt and actions alike. Its gradient is checked against central finite differences of the KL
// the call itself reports, on a policy trained away from its base.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildRlDatum, buildSftDatum, type Datum, modelInputLength } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { hostValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "./trainer.ts";

let dir: string;
let base: BaseModel;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-refkl-"));
  await writeTinyModel(dir, {
    hiddenSize: 16,
    numLayers: 2,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 24,
    seed: 13,
    scale: 0.3,
  });
  base = await loadBaseModel(dir, "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const COEF = 0.5;
/** Zero advantages: the policy-gradient term is 0, so the gradient is the KL's alone. */
const ROLLOUTS: Datum[] = [
  buildRlDatum({
    sequence: [3, 40, 7, 99, 12, 5],
    mask: [0, 0, 1, 1, 1, 1],
    logprobs: [0, 0, -2, -2, -2, -2],
    advantages: 0,
  }),
  buildRlDatum({ sequence: [200, 1, 2], mask: [0, 1, 1], logprobs: [0, -3, -3], advantages: 0 }),
];
const SFT = [buildSftDatum({ sequence: [3, 40, 7, 99, 12, 5, 8, 8], weights: [0, 1, 1, 1, 1, 1, 1, 1] })];

/** Moves the policy away from its base with a few SFT steps. */
function trainAway(policy: Policy): Trainer {
  const trainer = new Trainer(policy);
  for (let i = 0; i < 5; i++) {
    trainer.forwardBackward(SFT, "cross_entropy");
    trainer.optimStep({ learningRate: 0.05 });
  }
  return trainer;
}

const POSITIONS = ROLLOUTS.reduce((n, d) => n + modelInputLength(d.modelInput), 0);

/** Σ over every position of KL(π_base ‖ π), from the call's own metric (gradients are cleared after). */
function klSum(trainer: Trainer, policy: Policy): number {
  const { metrics } = trainer.forwardBackward(ROLLOUTS, "importance_sampling", { referenceKl: COEF });
  for (const t of policy.tensors) policy.params.backend.fill(t.grad, 0);
  return (metrics["reference_kl:mean"] as number) * POSITIONS;
}

function checkGradient(policy: Policy): void {
  const trainer = trainAway(policy);
  trainer.forwardBackward(ROLLOUTS, "importance_sampling", { referenceKl: COEF });
  const be = policy.params.backend;
  const grads = policy.tensors.map((t) => hostValues(policy, t.grad));
  for (const t of policy.tensors) be.fill(t.grad, 0);
  expect(klSum(trainer, policy)).toBeGreaterThan(1e-3);
  let checked = 0;
  policy.tensors.forEach((t, k) => {
    const g = grads[k] as Float32Array;
    let largest = 0;
    g.forEach((v, i) => {
      if (Math.abs(v) > Math.abs(g[largest] as number)) largest = i;
    });
    if (g[largest] === 0) return;
    const original = hostValues(policy, t.value)[largest] as number;
    const set = (x: number) => be.write(t.value, Float32Array.of(x), largest);
    const eps = 1e-2;
    set(original + eps);
    const up = klSum(trainer, policy);
    set(original - eps);
    const down = klSum(trainer, policy);
    set(original);
    const numeric = (COEF * (up - down)) / (2 * eps);
    expect(Math.abs(numeric - (g[largest] as number)), `${t.name}[${largest}]`).toBeLessThan(
      2e-3 + 0.05 * Math.abs(numeric),
    );
    checked++;
  });
  expect(checked).toBeGreaterThan(2);
}

const loraPolicy = (trainUnembed: boolean) =>
  createLoraPolicy(base, { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed, seed: 3 });

describe("referenceKl", () => {
  it("is 0, with no gradient, while a LoRA policy still equals its base", () => {
    const policy = loraPolicy(true);
    const trainer = new Trainer(policy);
    const { metrics } = trainer.forwardBackward(ROLLOUTS, "importance_sampling", { referenceKl: COEF });
    expect(metrics["reference_kl:mean"]).toBeCloseTo(0, 6);
    for (const t of policy.tensors)
      expect(hostValues(policy, t.grad).every((g) => Math.abs(g) < 1e-6)).toBe(true);
  });

  it("gives the KL's gradient on a LoRA policy (finite differences)", () => {
    checkGradient(loraPolicy(true));
  });

  it("gives the KL's gradient on a full-parameter policy, whose reference is the base's weights", () => {
    checkGradient(createFullPolicy(base));
  });

  it("is not in forward, and a zero weight leaves the gradients bit for bit as without it", () => {
    const [policy, twin] = [loraPolicy(false), loraPolicy(false)];
    const [trainer, twinTrainer] = [trainAway(policy), trainAway(twin)];
    const data = [
      buildRlDatum({
        sequence: [3, 40, 7, 99],
        mask: [0, 1, 1, 1],
        logprobs: [0, -2, -2, -2],
        advantages: 1,
      }),
    ];
    expect(trainer.forward(data, "importance_sampling", { referenceKl: COEF }).metrics).not.toHaveProperty(
      "reference_kl:mean",
    );
    const off = trainer.forwardBackward(data, "importance_sampling", { referenceKl: 0 });
    expect(off.metrics).not.toHaveProperty("reference_kl:mean");
    twinTrainer.forwardBackward(data, "importance_sampling");
    policy.tensors.forEach((t, k) => {
      expect(hostValues(policy, t.grad).some((g) => g !== 0)).toBe(true);
      expect(Array.from(hostValues(policy, t.grad))).toEqual(
        Array.from(hostValues(twin, (twin.tensors[k] as typeof t).grad)),
      );
    });
  });

  it("reaches the positions the loss does not train (a prompt with an empty mask)", () => {
    const policy = loraPolicy(false);
    const trainer = trainAway(policy);
    const prompt = buildRlDatum({
      sequence: [3, 40, 7, 99],
      mask: [0, 0, 0, 0],
      logprobs: [0, 0, 0, 0],
      advantages: 0,
    });
    const { metrics } = trainer.forwardBackward([prompt], "importance_sampling", { referenceKl: COEF });
    expect(metrics["reference_kl:mean"]).toBeGreaterThan(1e-3);
    expect(policy.tensors.some((t) => hostValues(policy, t.grad).some((g) => g !== 0))).toBe(true);
  });

  it("refuses a negative weight, naming it", () => {
    const trainer = new Trainer(createFullPolicy(base));
    expect(() => trainer.forwardBackward(ROLLOUTS, "importance_sampling", { referenceKl: -1 })).toThrow(
      /referenceKl/,
    );
  });
});
