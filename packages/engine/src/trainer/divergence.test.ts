// Divergence guards: a training call that meets a non-finite loss or gradient
// norm is refused with a message naming what was non-finite, and the policy's
// weights, AdamW moments and step stay exactly as they were.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildRlDatum, buildSftDatum, type Datum, isNonFiniteError } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { LoraSpec, Policy } from "../policy/policy.ts";
import { hostValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "./trainer.ts";

const LORA: LoraSpec = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: false, seed: 7 };
let base: BaseModel;
let modelDir: string;
beforeAll(async () => {
  modelDir = await mkdtemp(path.join(tmpdir(), "ot-divergence-"));
  await writeTinyModel(modelDir, {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 5,
    scale: 0.2,
  });
  base = await loadBaseModel(modelDir, "tiny");
});
afterAll(() => rm(modelDir, { recursive: true, force: true }));

const SFT = buildSftDatum({ sequence: [1, 2, 3, 4, 5, 6], weights: [0, 0, 0, 1, 1, 1] });
const rl = (oldLogprob: number, advantage: number): Datum =>
  buildRlDatum({
    sequence: [4, 5, 6, 7, 8],
    mask: [0, 0, 1, 1, 1],
    logprobs: [0, 0, oldLogprob, oldLogprob, oldLogprob],
    advantages: advantage,
  });

/** Weights, moments and step: what a refused call must leave untouched. */
function trainedState(p: Policy) {
  return {
    step: p.step,
    tensors: p.tensors.map((t) => [t.value, t.m, t.v].map((b) => Array.from(hostValues(p, b)))),
  };
}

/** A policy one good step in, with gradients accumulated for the next. */
function trainedPolicy(): { policy: Policy; trainer: Trainer } {
  const policy = createLoraPolicy(base, LORA);
  const trainer = new Trainer(policy);
  trainer.forwardBackward([SFT], "cross_entropy");
  trainer.optimStep({ learningRate: 1e-2 });
  trainer.forwardBackward([SFT], "cross_entropy");
  return { policy, trainer };
}

const noGradients = (p: Policy) =>
  !p.hasGrad && p.tensors.every((t) => hostValues(p, t.grad).every((g) => g === 0));

/** Sets the first tensor's first gradient entry. */
const setFirstGrad = (p: Policy, g: number) =>
  p.params.backend.write((p.tensors[0] as Policy["tensors"][number]).grad, Float32Array.of(g));

describe("a non-finite loss", () => {
  const cases: [string, Datum][] = [
    // exp(logp − old logprob) overflows: the importance ratio is Infinity.
    ["an importance ratio that overflows", rl(-1000, 1)],
    // Finite as a double, Infinity once stored as float32.
    ["an advantage past float32's range", rl(-5, 1e39)],
  ];
  for (const [name, datum] of cases) {
    it(`from ${name} fails forwardBackward, naming it, with weights and moments untouched`, () => {
      const { policy, trainer } = trainedPolicy();
      const before = trainedState(policy);
      let error: unknown;
      try {
        trainer.forwardBackward([rl(-5, 1), datum], "importance_sampling");
      } catch (e) {
        error = e;
      }
      expect(String(error)).toMatch(/forwardBackward: non-finite loss at data\[1\] \((-?Infinity|NaN)\)/);
      expect(isNonFiniteError(error)).toBe(true);
      expect(trainedState(policy)).toEqual(before);
      // No NaN reached the gradients: they were cleared, so the next step starts clean.
      expect(noGradients(policy)).toBe(true);
      expect(() => trainer.optimStep({ learningRate: 1e-2 })).toThrow(/no gradients were accumulated/);
    });
  }

  it("is still reported by forward, which trains nothing", () => {
    const { trainer } = trainedPolicy();
    const out = trainer.forward([rl(-1000, 1)], "importance_sampling");
    expect(Number.isFinite(out.metrics["loss:sum"])).toBe(false);
  });
});

describe("a non-finite gradient norm", () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`(${bad}) fails optimStep, naming it, without applying the update`, () => {
      const { policy, trainer } = trainedPolicy();
      const before = trainedState(policy);
      setFirstGrad(policy, bad);
      let error: unknown;
      try {
        trainer.optimStep({ learningRate: 1e-2 });
      } catch (e) {
        error = e;
      }
      expect(String(error)).toMatch(
        /optimStep: non-finite gradient norm \((NaN|Infinity)\); the step was not applied/,
      );
      expect(isNonFiniteError(error)).toBe(true);
      expect(trainedState(policy)).toEqual(before);
      expect(noGradients(policy)).toBe(true);
    });
  }
});

it("a finite gradient whose square overflows float32 fails optimStep, leaving the AdamW moments finite", () => {
  const { policy, trainer } = trainedPolicy();
  const before = trainedState(policy);
  setFirstGrad(policy, 1e20);
  expect(() => trainer.optimStep({ learningRate: 1e-2 })).toThrow(
    /optimStep: non-finite squared gradient in float32 \(gradient norm 1\.00e\+20\) \(Infinity\)/,
  );
  expect(trainedState(policy)).toEqual(before);
  // Clipped below the limit, the same gradient is an ordinary step.
  trainer.forwardBackward([SFT], "cross_entropy");
  setFirstGrad(policy, 1e20);
  trainer.optimStep({ learningRate: 1e-2, gradClipNorm: 1 });
  expect(policy.tensors.every((t) => hostValues(policy, t.v).every(Number.isFinite))).toBe(true);
});

it("a learning rate past the bound is refused before anything changes", () => {
  const { policy, trainer } = trainedPolicy();
  const before = trainedState(policy);
  expect(() => trainer.optimStep({ learningRate: 1e9 })).toThrow(/learningRate must be at most 1/);
  expect(trainedState(policy)).toEqual(before);
  expect(policy.hasGrad).toBe(true);
});
