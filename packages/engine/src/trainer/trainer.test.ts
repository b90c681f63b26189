import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildRlDatum, buildSftDatum, type Datum } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { LoraSpec, Policy } from "../policy/policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { restoreState, stateFiles } from "../snapshots/state.ts";
import { tempDir } from "../testing/temp-dir.ts";
import { hostValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "./trainer.ts";

const LORA: LoraSpec = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: false, seed: 7 };
let base: BaseModel;

let modelDir: string;
beforeAll(async () => {
  modelDir = await mkdtemp(path.join(tmpdir(), "ot-trainer-"));
  const dir = modelDir;
  await writeTinyModel(dir, {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 5,
    scale: 0.2,
  });
  base = await loadBaseModel(dir, "tiny");
});
afterAll(() => rm(modelDir, { recursive: true, force: true }));

const sft = (tokens: number[], firstAction: number): Datum =>
  buildSftDatum({ sequence: tokens, weights: tokens.map((_, i) => (i >= firstAction ? 1 : 0)) });

const rl = (tokens: number[], advantage: number): Datum =>
  buildRlDatum({
    sequence: tokens,
    mask: tokens.map((_, i) => (i >= 3 ? 1 : 0)),
    logprobs: tokens.map((_, i) => (i >= 3 ? -5 : 0)),
    advantages: advantage,
  });

const BATCH_A = [sft([1, 2, 3, 4, 5, 6], 3), sft([9, 8, 7, 6], 2)];
const BATCH_B = [sft([40, 41, 42, 43, 44], 1)];

/** Everything that defines a policy's state, copied. */
function stateOf(p: Policy) {
  return {
    step: p.step,
    hasGrad: p.hasGrad,
    tensors: p.tensors.map((t) => [
      Array.from(hostValues(p, t.value)),
      Array.from(hostValues(p, t.grad)),
      Array.from(hostValues(p, t.m)),
      Array.from(hostValues(p, t.v)),
    ]),
  };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs((a[i] as number) - (b[i] as number)));
  return worst;
}

describe("training", () => {
  it("SFT lowers the loss on its data (LoRA)", () => {
    const policy = createLoraPolicy(base, LORA);
    const trainer = new Trainer(policy);
    const before = trainer.forward(BATCH_A, "cross_entropy").metrics["loss:sum"] as number;
    for (let i = 0; i < 10; i++) {
      trainer.forwardBackward(BATCH_A, "cross_entropy");
      trainer.optimStep({ learningRate: 1e-2 });
    }
    const after = trainer.forward(BATCH_A, "cross_entropy").metrics["loss:sum"] as number;
    expect(after).toBeLessThan(before * 0.8);
    expect(policy.step).toBe(10);
  });

  it("returns each datum's per-token logprobs on its target axis", () => {
    const out = new Trainer(createLoraPolicy(base, LORA)).forward(BATCH_A, "cross_entropy");
    expect(out.lossFnOutputs.map((o) => o.logprobs?.data.length)).toEqual([5, 3]);
    for (const o of out.lossFnOutputs) for (const lp of o.logprobs?.data ?? []) expect(lp).toBeLessThan(0);
  });

  for (const kind of ["lora", "full"] as const) {
    it(`${kind}: accumulating over two calls equals one call on the joint batch`, () => {
      const make = () => (kind === "lora" ? createLoraPolicy(base, LORA) : createFullPolicy(base));
      const split = make();
      const joint = make();
      // Give LoRA's B a value so A's gradient is not trivially zero.
      for (const p of [split, joint]) {
        new Trainer(p).forwardBackward(BATCH_B, "cross_entropy");
        new Trainer(p).optimStep({ learningRate: 1e-2 });
      }
      new Trainer(split).forwardBackward(BATCH_A.slice(0, 1), "cross_entropy");
      new Trainer(split).forwardBackward(BATCH_A.slice(1), "cross_entropy");
      new Trainer(joint).forwardBackward(BATCH_A, "cross_entropy");
      split.tensors.forEach((t, i) => {
        const jointGrad = hostValues(joint, (joint.tensors[i] as typeof t).grad);
        expect(maxAbsDiff(hostValues(split, t.grad), jointGrad)).toBeLessThan(1e-5);
      });
    });
  }

  it("two policies over one base trained in alternation equal each trained alone", () => {
    const alone1 = createLoraPolicy(base, LORA);
    const alone2 = createFullPolicy(base);
    const mixed1 = createLoraPolicy(base, LORA);
    const mixed2 = createFullPolicy(base);
    const train = (p: Policy, data: Datum[]) => {
      const t = new Trainer(p);
      t.forwardBackward(data, "cross_entropy");
      t.optimStep({ learningRate: 1e-2 });
    };
    for (let i = 0; i < 3; i++) train(alone1, BATCH_A);
    for (let i = 0; i < 3; i++) train(alone2, BATCH_B);
    for (let i = 0; i < 3; i++) {
      train(mixed1, BATCH_A);
      train(mixed2, BATCH_B);
    }
    expect(stateOf(mixed1)).toEqual(stateOf(alone1));
    expect(stateOf(mixed2)).toEqual(stateOf(alone2));
  });

  it("a zero advantage and an RL loss still train through the mask; off-mask advantages change nothing", () => {
    const p1 = createLoraPolicy(base, LORA);
    const p2 = createLoraPolicy(base, LORA);
    const data1 = [rl([1, 2, 3, 4, 5, 6], 1)];
    const data2 = structuredClone(data1);
    // Same datum, but a large advantage written on a prompt position (mask 0).
    (data2[0]?.lossFnInputs.advantages?.data as number[])[0] = 100;
    const o1 = new Trainer(p1).forwardBackward(data1, "ppo");
    const o2 = new Trainer(p2).forwardBackward(data2, "ppo");
    expect(o2.metrics).toEqual(o1.metrics);
    expect(stateOf(p2)).toEqual(stateOf(p1));
    expect(o1.metrics["tokens:sum"]).toBe(3);
  });
});

describe("bad input leaves the policy untouched", () => {
  const cases: [string, (t: Trainer) => unknown, RegExp][] = [
    [
      "a target token id ≥ vocabulary",
      (t) => t.forwardBackward([sft([1, 2, 99999], 1)], "cross_entropy"),
      /targetTokens\[1\] is 99999, expected a token id in \[0, 283\)/,
    ],
    [
      "an input token id ≥ vocabulary",
      (t) => t.forwardBackward([sft([99999, 2, 3], 1)], "cross_entropy"),
      /modelInput.chunks\[0\].tokens\[0\] is 99999/,
    ],
    ["an empty batch", (t) => t.forwardBackward([], "cross_entropy"), /non-empty array/],
    [
      "target/weight length mismatch",
      (t) => {
        const d = sft([1, 2, 3, 4], 1);
        (d.lossFnInputs.weights as { data: number[] }).data.pop();
        return t.forwardBackward([d], "cross_entropy");
      },
      /lossFnInputs.weights has 2 values, the input has 3 positions/,
    ],
    [
      "a NaN advantage",
      (t) => {
        const d = rl([1, 2, 3, 4, 5], 1);
        (d.lossFnInputs.advantages as { data: number[] }).data[3] = Number.NaN;
        return t.forwardBackward([d], "ppo");
      },
      /advantages\[3\] is NaN/,
    ],
    [
      "an infinite logprob",
      (t) => {
        const d = rl([1, 2, 3, 4, 5], 1);
        (d.lossFnInputs.logprobs as { data: number[] }).data[3] = Number.NEGATIVE_INFINITY;
        return t.forwardBackward([d], "importance_sampling");
      },
      /logprobs\[3\] is -Infinity/,
    ],
    ["an unknown loss name", (t) => t.forwardBackward(BATCH_A, "dpo" as never), /unknown loss "dpo"/],
    [
      "the RL inputs missing for an RL loss",
      (t) => t.forwardBackward(BATCH_A, "ppo"),
      /lossFnInputs.logprobs is missing/,
    ],
    ["optimStep with no gradients", (t) => t.optimStep(), /no gradients were accumulated/],
    ["optimStep with a NaN learning rate", (t) => t.optimStep({ learningRate: Number.NaN }), /learningRate/],
  ];
  for (const [name, call, message] of cases) {
    it(`${name}: a clear error and no change to weights, gradients or optimizer state`, () => {
      const policy = createLoraPolicy(base, LORA);
      const trainer = new Trainer(policy);
      trainer.forwardBackward(BATCH_B, "cross_entropy");
      trainer.optimStep({ learningRate: 1e-2 });
      if (!name.startsWith("optimStep with no")) trainer.forwardBackward(BATCH_B, "cross_entropy");
      const before = stateOf(policy);
      expect(() => call(trainer)).toThrow(message);
      expect(stateOf(policy)).toEqual(before);
    });
  }
});

describe("snapshots and checkpoints", () => {
  it("a published snapshot does not change when training continues", async () => {
    const store = new LocalStore(await tempDir());
    const policy = createLoraPolicy(base, LORA);
    const trainer = new Trainer(policy);
    trainer.forwardBackward(BATCH_A, "cross_entropy");
    trainer.optimStep({ learningRate: 1e-2 });
    const files = snapshotFiles(policy);
    const stored = await store.put("demo/adapter/sampler/1", files);
    for (let i = 0; i < 3; i++) {
      trainer.forwardBackward(BATCH_A, "cross_entropy");
      trainer.optimStep({ learningRate: 1e-2 });
    }
    const readBack = await store.get(stored.path, stored.checksum);
    expect(readBack).toEqual(files);
    await expect(store.put("demo/adapter/sampler/1", snapshotFiles(policy))).rejects.toThrow(/immutable/);
  });

  it("a resumed run produces bit-identical next steps", async () => {
    const original = createLoraPolicy(base, LORA);
    const trainer = new Trainer(original);
    const step = (t: Trainer) => {
      t.forwardBackward(BATCH_A, "cross_entropy");
      return t.optimStep({ learningRate: 1e-2, weightDecay: 0.01, gradClipNorm: 1 });
    };
    step(trainer);
    step(trainer);
    const checkpoint = stateFiles(original);
    const resumed = createLoraPolicy(base, { ...LORA });
    restoreState(resumed, checkpoint, "test");
    const resumedTrainer = new Trainer(resumed);
    for (let i = 0; i < 2; i++) expect(step(resumedTrainer)).toEqual(step(trainer));
    expect(stateOf(resumed)).toEqual(stateOf(original));
  });

  it("a checkpoint of another configuration is refused without changing the policy", () => {
    const source = createLoraPolicy(base, LORA);
    const other = createLoraPolicy(base, { ...LORA, rank: 2 });
    const before = stateOf(other);
    expect(() => restoreState(other, stateFiles(source), "ckpt")).toThrow(/LoRA configuration/);
    expect(() => restoreState(createFullPolicy(base), stateFiles(source), "ckpt")).toThrow(
      /lora checkpoint cannot load into a full/,
    );
    expect(stateOf(other)).toEqual(before);
  });
});
