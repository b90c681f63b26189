import type { InProcessServiceClient, InProcessTrainingClient } from "@opentinker/engine";
import { hostValues } from "@opentinker/engine/testing";
import {
  buildSftDatum,
  lossInput,
  type ModelInput,
  modelInputFromTokens,
  modelInputTokens,
} from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Env, EnvGroupBuilder, RlDataset, StepResult } from "../env/types.ts";
import { MemorySink } from "../metrics/sink.ts";
import { rolloutEnv } from "../rollout/rollout.ts";
import type { Trajectory } from "../rollout/trajectory.ts";
import { tinyService } from "../testing/index.ts";
import { groupAdvantages } from "./advantages.ts";
import { trajectoryDatums } from "./datums.ts";
import { applyStaleness, envMetricMeans, evaluate, trainOnGroups, trainRl } from "./train.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
});
afterAll(() => cleanup());

const PROMPT = [10, 20, 30, 40];

/** Single turn: reward 1 when the first generated token is below `threshold`. */
class ThresholdEnv implements Env {
  constructor(private readonly threshold = 141) {}
  async initialObservation() {
    return { observation: modelInputFromTokens(PROMPT), stop: { stop: [], maxTokens: 1 } };
  }
  async step(action: number[]): Promise<StepResult> {
    return { reward: (action[0] as number) < this.threshold ? 1 : 0, done: true };
  }
}

/** Two turns; the second observation extends the context with [100, 101]; reward only on turn 2. */
class TwoTurnEnv implements Env {
  private context: number[] = [...PROMPT];
  private turn = 0;
  async initialObservation() {
    return { observation: modelInputFromTokens(this.context), stop: { stop: [], maxTokens: 2 } };
  }
  async step(action: number[]): Promise<StepResult> {
    this.turn++;
    this.context = [...this.context, ...action, 100, 101];
    // Mutating the action must not change what the rollout recorded.
    action.fill(0);
    if (this.turn === 2) return { reward: 5, done: true };
    return { reward: 0, done: false, nextObservation: modelInputFromTokens(this.context) };
  }
}

const groupOf = (make: () => Env, size: number): EnvGroupBuilder => ({
  makeEnvs: async () => Array.from({ length: size }, make),
});

const dataset = (batches: number, groups: number, make: () => Env, size = 8): RlDataset => ({
  batches,
  batch: () => Array.from({ length: groups }, () => groupOf(make, size)),
});

async function sampler(tc: InProcessTrainingClient) {
  const saved = await (await tc.saveWeightsForSampler("test")).result();
  return { client: await tc.createSamplingClient(saved.handle), version: saved.version };
}

describe("rollout and datums", () => {
  it("records the generated tokens and logprobs before the environment sees the action", async () => {
    const tc = (await service.createLoraTrainingClient({
      baseModel: "tiny",
      rank: 2,
    })) as InProcessTrainingClient;
    const s = await sampler(tc);
    const t = await rolloutEnv(new TwoTurnEnv(), s.client, { policyVersion: s.version, seed: 1 });
    expect(t.failure).toBeUndefined();
    expect(t.transitions).toHaveLength(2);
    for (const tr of t.transitions) {
      expect(tr.actionTokens).toHaveLength(2);
      expect(tr.actionTokens.some((x) => x !== 0)).toBe(true);
      const logprobs = await (
        await s.client.computeLogprobs(appendTokens(tr.observation, tr.actionTokens))
      ).result();
      const own = logprobs.slice(-2) as number[];
      tr.actionLogprobs.forEach((lp, i) => {
        expect(Math.abs(lp - (own[i] as number))).toBeLessThan(1e-4);
      });
    }
  });

  it("end to end: a two-turn rollout gives one datum with both turns' actions on the mask and the reward on turn 2", async () => {
    const tc = (await service.createLoraTrainingClient({
      baseModel: "tiny",
      rank: 2,
    })) as InProcessTrainingClient;
    const s = await sampler(tc);
    const t = await rolloutEnv(new TwoTurnEnv(), s.client, { policyVersion: s.version, seed: 9 });
    const [scored] = groupAdvantages(
      { trajectories: [t] },
      { centre: false, dropConstantGroups: false, perTurnDiscount: 0 },
    );
    const datums = trajectoryDatums(scored as NonNullable<typeof scored>);
    expect(datums).toHaveLength(1);
    const d = datums[0] as (typeof datums)[number];
    // Targets: prompt[1..], turn-1 action (2), observation [100, 101], turn-2 action (2).
    expect(lossInput(d, "mask")).toEqual([0, 0, 0, 1, 1, 0, 0, 1, 1]);
    expect(lossInput(d, "advantages")).toEqual([0, 0, 0, 0, 0, 0, 0, 5, 5]);
    const targets = lossInput(d, "targetTokens");
    expect(targets.slice(3, 5)).toEqual(t.transitions[0]?.actionTokens);
    expect(targets.slice(5, 7)).toEqual([100, 101]);
    expect(targets.slice(7)).toEqual(t.transitions[1]?.actionTokens);
  });

  it("a reward on one turn lands only on that turn's action tokens; observations are masked", async () => {
    const trajectory: Trajectory = {
      policyVersion: 1,
      transitions: [
        {
          observation: modelInputFromTokens([1, 2]),
          actionTokens: [3, 4],
          actionLogprobs: [-1, -2],
          reward: 0,
          done: false,
          metrics: {},
        },
        {
          observation: modelInputFromTokens([1, 2, 3, 4, 9, 9]),
          actionTokens: [5],
          actionLogprobs: [-3],
          reward: 2,
          done: true,
          metrics: {},
        },
      ],
    };
    const [scored] = groupAdvantages(
      { trajectories: [trajectory] },
      { centre: false, dropConstantGroups: false, perTurnDiscount: 0 },
    );
    const datums = trajectoryDatums(scored as NonNullable<typeof scored>);
    expect(datums).toHaveLength(1); // the second observation extends the first context: one sequence
    const d = datums[0] as (typeof datums)[number];
    expect(modelInputTokens(d.modelInput)).toEqual([1, 2, 3, 4, 9, 9]);
    expect(lossInput(d, "targetTokens")).toEqual([2, 3, 4, 9, 9, 5]);
    expect(lossInput(d, "mask")).toEqual([0, 1, 1, 0, 0, 1]);
    expect(lossInput(d, "advantages")).toEqual([0, 0, 0, 0, 0, 2]);
    expect(lossInput(d, "logprobs")).toEqual([0, -1, -2, 0, 0, -3]);
  });

  it("a turn whose observation does not extend the context starts a new datum", () => {
    const trajectory: Trajectory = {
      policyVersion: 1,
      transitions: [
        {
          observation: modelInputFromTokens([1, 2]),
          actionTokens: [3],
          actionLogprobs: [-1],
          reward: 1,
          done: false,
          metrics: {},
        },
        {
          observation: modelInputFromTokens([7, 8]),
          actionTokens: [5],
          actionLogprobs: [-2],
          reward: 1,
          done: true,
          metrics: {},
        },
      ],
    };
    const [scored] = groupAdvantages(
      { trajectories: [trajectory] },
      { centre: false, dropConstantGroups: false },
    );
    expect(trajectoryDatums(scored as NonNullable<typeof scored>)).toHaveLength(2);
  });

  it("a group of identical rewards has zero advantages and, with the option on, no datum", () => {
    const t = (): Trajectory => ({
      policyVersion: 1,
      transitions: [
        {
          observation: modelInputFromTokens([1, 2]),
          actionTokens: [3],
          actionLogprobs: [-1],
          reward: 1,
          done: true,
          metrics: {},
        },
      ],
    });
    const group = { trajectories: [t(), t(), t()] };
    expect(groupAdvantages(group, { dropConstantGroups: false }).map((s) => s.turnAdvantages)).toEqual([
      [0],
      [0],
      [0],
    ]);
    expect(groupAdvantages(group)).toEqual([]);
  });

  it("negative advantages are scaled by negativeScale; positive ones are left as they are", () => {
    const t = (reward: number): Trajectory => ({
      policyVersion: 1,
      transitions: [
        {
          observation: modelInputFromTokens([1, 2]),
          actionTokens: [3],
          actionLogprobs: [-1],
          reward,
          done: true,
          metrics: {},
        },
      ],
    });
    const group = { trajectories: [t(1), t(0), t(0), t(1)] };
    const advantages = (negativeScale?: number) =>
      groupAdvantages(group, negativeScale === undefined ? {} : { negativeScale }).map(
        (s) => s.turnAdvantages,
      );
    expect(advantages()).toEqual([[0.5], [-0.5], [-0.5], [0.5]]);
    expect(advantages(0.5)).toEqual([[0.5], [-0.25], [-0.25], [0.5]]);
    expect(advantages(0)).toEqual([[0.5], [0], [0], [0.5]]);
    expect(() => advantages(-1)).toThrow(/negativeScale must be a finite number ≥ 0 \(got -1\)/);
  });

  it("staleness: a trajectory from v trained at v+k is dropped past maxStaleness or kept to be corrected", () => {
    expect(applyStaleness(3, 6, { maxStaleness: 2, mode: "drop" })).toEqual({ staleness: 3, keep: false });
    expect(applyStaleness(3, 6, { maxStaleness: 2, mode: "correct" })).toEqual({ staleness: 3, keep: true });
    expect(applyStaleness(5, 6, { maxStaleness: 2, mode: "drop" })).toEqual({ staleness: 1, keep: true });
  });
});

describe("environment metrics", () => {
  const episode = (...metrics: Record<string, number>[]): Trajectory => ({
    policyVersion: 0,
    transitions: metrics.map((m) => ({
      observation: modelInputFromTokens([1]),
      actionTokens: [2],
      actionLogprobs: [-1],
      reward: 0,
      done: false,
      metrics: m,
    })),
  });

  it("averages each metric over the episodes that report it, taking an episode's last value", () => {
    const means = envMetricMeans(
      [
        episode({}, { "format/malformed": 1, turns: 2 }),
        episode({ "format/malformed": 0 }),
        episode({ "format/malformed": 1 }, { "format/malformed": 0, turns: 4 }),
        episode({}),
      ],
      "val/",
    );
    expect(means).toEqual({ "val/env/format/malformed": 1 / 3, "val/env/turns": 3 });
  });
});

describe("the RL loop", () => {
  it("trajectories from version v trained at v+k: dropped past maxStaleness, or kept and corrected; k is recorded", async () => {
    const tc = (await service.createLoraTrainingClient({
      baseModel: "tiny",
      rank: 2,
      seed: 8,
    })) as InProcessTrainingClient;
    const s = await sampler(tc);
    const group = {
      trajectories: await Promise.all(
        [0, 1, 2, 3].map((i) =>
          rolloutEnv(new ThresholdEnv(60), s.client, { policyVersion: s.version, seed: 40 + i }),
        ),
      ),
    };
    expect(new Set(group.trajectories.map((t) => t.transitions[0]?.reward)).size).toBe(2); // a mixed group
    const k = 3;
    const base = {
      trainingClient: tc,
      dataset: dataset(0, 0, () => new ThresholdEnv()),
      lossFn: "importance_sampling" as const,
    };
    const dropped = await trainOnGroups(
      { ...base, staleness: { maxStaleness: 2, mode: "drop" } },
      [group],
      s.version + k,
    );
    expect(dropped.record["staleness/max"]).toBe(k);
    expect(dropped.record["trajectories/dropped_stale"]).toBe(4);
    expect(dropped.trained).toBe(false);
    expect(tc.policy.step).toBe(0);
    const corrected = await trainOnGroups(
      { ...base, staleness: { maxStaleness: 2, mode: "correct" } },
      [group],
      s.version + k,
    );
    expect(corrected.record["staleness/max"]).toBe(k);
    expect(corrected.trained).toBe(true);
    expect(tc.policy.step).toBe(1);
  });

  it("validation runs the same workflow with no loss and no optimizer step", async () => {
    const tc = (await service.createLoraTrainingClient({
      baseModel: "tiny",
      rank: 2,
      seed: 5,
    })) as InProcessTrainingClient;
    const before = tc.policy.tensors.map((t) => Array.from(hostValues(tc.policy, t.value)));
    const { metrics } = await evaluate(
      await sampler(tc),
      dataset(1, 2, () => new ThresholdEnv(), 4),
      {},
    );
    expect(metrics["val/reward/mean"]).toBeGreaterThanOrEqual(0);
    expect(tc.policy.step).toBe(0);
    expect(tc.policy.tensors.map((t) => Array.from(hostValues(tc.policy, t.value)))).toEqual(before);
  });

  it("validates before the first step (as step 0), every N steps and after the last, each with the version it measured", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2, seed: 8 });
    const seen: { step: number; version: number; policyVersion: number | undefined }[] = [];
    const records = await trainRl({
      trainingClient: tc,
      dataset: dataset(5, 1, () => new ThresholdEnv(), 4),
      lossFn: "importance_sampling",
      advantages: { dropConstantGroups: false },
      validation: { dataset: dataset(1, 2, () => new ThresholdEnv(), 1), every: 2 },
      seed: 4,
      onStep: async ({ step, validated, record }) => {
        if (validated)
          seen.push({ step, version: validated.version, policyVersion: record["policy/version"] });
      },
    });
    expect(seen.map((s) => s.step)).toEqual([0, 1, 3, 4]);
    // The baseline measured the untrained first version; the others, the version the step published.
    expect(seen[0]?.version).toBe(1);
    expect(seen[0]?.policyVersion).toBe(2);
    for (const s of seen.slice(1)) expect(s.version).toBe(s.policyVersion);
    expect(records.filter((r) => r["val/reward/mean"] !== undefined).map((r) => r.step)).toEqual([
      0, 1, 3, 4,
    ]);
  });

  it("an environment that throws or returns NaN fails its own trajectory; the rest of the batch trains", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2, seed: 6 });
    let n = 0;
    const flaky = (): Env => {
      const k = n++;
      if (k === 0)
        return {
          initialObservation: async () => {
            throw new Error("boom");
          },
          step: async () => ({ reward: 0, done: true }),
        };
      if (k === 1)
        return {
          initialObservation: new ThresholdEnv().initialObservation,
          step: async () => ({ reward: Number.NaN, done: true }),
        };
      return new ThresholdEnv();
    };
    const sink = new MemorySink();
    await trainRl({
      trainingClient: tc,
      dataset: dataset(1, 1, flaky, 8),
      lossFn: "importance_sampling",
      sink,
      seed: 3,
      checkpointEvery: 1,
    });
    const record = sink.records[0];
    expect(record?.["trajectories/failed"]).toBe(2);
    expect(record?.["policy/version"]).toBe(2); // trained and published a new version
    expect(record?.["checkpoint/saved"]).toBe(1);
  });

  it("GRPO on a toy task raises the reward (deterministic run)", async () => {
    const tc = await service.createLoraTrainingClient({
      baseModel: "tiny",
      rank: 8,
      seed: 7,
      trainUnembed: true,
    });
    const sink = new MemorySink();
    const history = await trainRl({
      trainingClient: tc,
      dataset: dataset(8, 4, () => new ThresholdEnv(), 8),
      lossFn: "ppo",
      adam: { learningRate: 5e-2 },
      advantages: { scaleByStd: true },
      sink,
      seed: 11,
    });
    const first = history[0]?.["reward/mean"] as number;
    const last = ((history[6]?.["reward/mean"] as number) + (history[7]?.["reward/mean"] as number)) / 2;
    expect(last).toBeGreaterThan(first + 0.2);
    expect(history.every((r) => r["staleness/max"] === 0)).toBe(true);
  });

  it("a mixed-in supervised batch (PPO-ptx) joins each step's gradient before its one optimizer step", async () => {
    const mixed = [buildSftDatum({ sequence: [10, 20, 30, 40, 50], weights: [0, 0, 0, 1, 1] })];
    const asked: number[] = [];
    const run = async (mixedIn?: (step: number) => typeof mixed) => {
      const tc = (await service.createLoraTrainingClient({
        baseModel: "tiny",
        rank: 2,
        seed: 8,
      })) as InProcessTrainingClient;
      const sink = new MemorySink();
      await trainRl({
        trainingClient: tc,
        dataset: dataset(2, 1, () => new ThresholdEnv(), 4),
        lossFn: "importance_sampling",
        advantages: { dropConstantGroups: false },
        seed: 4,
        sink,
        ...(mixedIn ? { mixedIn } : {}),
      });
      return { tc, records: sink.records };
    };
    const plain = await run();
    const mix = await run((step) => {
      asked.push(step);
      return mixed;
    });
    expect(asked).toEqual([0, 1]);
    expect(mix.tc.policy.step).toBe(2);
    // The same first rollout and RL loss; the mix is measured and moves the weights.
    expect(mix.records[0]?.["loss/sum"]).toBe(plain.records[0]?.["loss/sum"]);
    expect(mix.records[0]?.["mixed/loss/mean"]).toBeGreaterThan(0);
    expect(plain.records[0]?.["mixed/loss/mean"]).toBeUndefined();
    const weights = (tc: InProcessTrainingClient) =>
      tc.policy.tensors.map((t) => Array.from(hostValues(tc.policy, t.value)));
    expect(weights(mix.tc)).not.toEqual(weights(plain.tc));
  });

  it("a learning-rate schedule sets each step's optimizer rate: from the peak down to the last step's share", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 3 });
    const rates = async (lrSchedule?: "constant" | "linear" | "cosine") =>
      (
        await trainRl({
          trainingClient: tc,
          dataset: dataset(4, 1, () => new ThresholdEnv(), 8),
          lossFn: "ppo",
          adam: { learningRate: 1e-3 },
          advantages: { dropConstantGroups: false },
          ...(lrSchedule ? { lrSchedule } : {}),
          seed: 5,
        })
      ).map((r) => r["learning_rate/value"] as number);
    const close = (actual: number[], expected: number[]) => {
      expect(actual).toHaveLength(expected.length);
      for (const [i, x] of actual.entries()) expect(x).toBeCloseTo(expected[i] as number, 12);
    };
    close(await rates(), [1e-3, 1e-3, 1e-3, 1e-3]);
    close(await rates("linear"), [1e-3, 7.5e-4, 5e-4, 2.5e-4]);
    const cosine = [0, 1, 2, 3].map((s) => 1e-3 * 0.5 * (1 + Math.cos((Math.PI * s) / 4)));
    close(await rates("cosine"), cosine);
  });
});

function appendTokens(input: ModelInput, tokens: number[]): ModelInput {
  return modelInputFromTokens([...modelInputTokens(input), ...tokens]);
}
