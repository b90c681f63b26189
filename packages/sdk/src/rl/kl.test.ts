import type { InProcessServiceClient } from "@opentinker/engine";
import { buildSftDatum, lossInput, modelInputFromTokens } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Env, StepResult } from "../env/types.ts";
import { rolloutEnv } from "../rollout/rollout.ts";
import { tinyService } from "../testing/index.ts";
import { groupAdvantages } from "./advantages.ts";
import { trajectoryDatums } from "./datums.ts";
import { applyKlPenalty } from "./kl.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
});
afterAll(() => cleanup());

class OneShot implements Env {
  constructor(private readonly prompt: number[]) {}
  async initialObservation() {
    return { observation: modelInputFromTokens(this.prompt), stop: { stop: [], maxTokens: 3 } };
  }
  async step(): Promise<StepResult> {
    return { reward: 1, done: true };
  }
}

async function trainedSampler() {
  const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 3 });
  const datum = buildSftDatum({ sequence: [10, 20, 30, 40, 7, 8, 9], weights: [0, 0, 0, 0, 1, 1, 1] });
  for (let i = 0; i < 5; i++) {
    await tc.forwardBackward([datum], "cross_entropy");
    await tc.optimStep({ learningRate: 2e-2 });
  }
  const saved = await (await tc.saveWeightsForSampler("kl")).result();
  return { client: await tc.createSamplingClient(saved.handle), version: saved.version };
}

describe("KL penalty", () => {
  it("is zero against the rollout policy itself and −β·(log π − log π_ref) against another", async () => {
    const policy = await trainedSampler();
    const t = await rolloutEnv(new OneShot([10, 20, 30, 40]), policy.client, {
      policyVersion: policy.version,
      seed: 5,
    });
    const group = {
      trajectories: [t, { ...t, transitions: t.transitions.map((x) => ({ ...x, reward: 0 })) }],
    };
    const build = () => groupAdvantages(group).flatMap((s) => trajectoryDatums(s));
    const same = build();
    const before = same.map((d) => [...lossInput(d, "advantages")]);
    const selfKl = await applyKlPenalty(same, { reference: policy.client, coef: 0.5 });
    expect(Math.abs(selfKl)).toBeLessThan(1e-4);
    same.forEach((d, i) => {
      lossInput(d, "advantages").forEach((a, j) => {
        expect(Math.abs(a - (before[i]?.[j] as number))).toBeLessThan(1e-4);
      });
    });

    const base = await service.createSamplingClient({ baseModel: "tiny" });
    const other = build();
    const kl = await applyKlPenalty(other, { reference: base, coef: 0.5 });
    expect(Math.abs(kl)).toBeGreaterThan(1e-3);
    const d = other[0] as (typeof other)[number];
    const tokens = [...lossInput(d, "targetTokens")];
    const ref = await (await base.computeLogprobs(modelInputFromTokens([10, ...tokens]))).result();
    const mask = lossInput(d, "mask");
    lossInput(d, "advantages").forEach((a, j) => {
      const expected = mask[j]
        ? (before[0]?.[j] as number) -
          0.5 * ((lossInput(d, "logprobs")[j] as number) - (ref[j + 1] as number))
        : 0;
      expect(Math.abs(a - expected)).toBeLessThan(1e-4);
    });
  });

  it("an observation past the model's context fails that trajectory with the reason", async () => {
    const sampler = await service.createSamplingClient({ baseModel: "tiny" });
    const long = Array.from({ length: 5000 }, (_, i) => i % 200);
    const t = await rolloutEnv(new OneShot(long), sampler, { policyVersion: 0 });
    expect(t.failure).toMatch(/context/);
    expect(t.transitions).toHaveLength(0);
  });
});
