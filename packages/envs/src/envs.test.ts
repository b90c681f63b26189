import { rm } from "node:fs/promises";
import type { InProcessServiceClient } from "@opentinker/engine";
import { modelInputTokens } from "@opentinker/protocol";
import {
  type EnvGroupBuilder,
  MemorySink,
  type RendererTokenizer,
  rolloutGroups,
  trainRl,
} from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArithmeticEnv, arithmeticDataset, arithmeticKey, everyArithmeticTask } from "./arithmetic.ts";
import {
  GUESS_FORMAT_PENALTY,
  GUESS_RANGES,
  GUESS_VALIDATION_RANGE,
  GuessNumberEnv,
  guessKey,
  guessNumberDataset,
} from "./guess-number.ts";
import { NIM_ILLEGAL_PENALTY, NIM_SELF_PLAY_PILES, nimEvaluationDataset, nimSelfPlayDataset } from "./nim.ts";
import { splitOf } from "./split.ts";
import { openTinyService } from "./testing/index.ts";

let dir: string;
let tokenizer: RendererTokenizer;
let service: InProcessServiceClient;
let end: number;
let say: (text: string) => number[];

beforeAll(async () => {
  ({ dir, tokenizer, service, end, say } = await openTinyService("envs"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("arithmetic", () => {
  it("lists every problem once, each with its answer, about one in ten held out", () => {
    const tasks = everyArithmeticTask();
    expect(tasks).toHaveLength(3 * 13 * 13);
    expect(new Set(tasks.map(arithmeticKey)).size).toBe(tasks.length);
    expect(tasks.find((t) => arithmeticKey(t) === "7*8")?.answer).toBe(56);
    const held = tasks.filter((t) => splitOf(arithmeticKey(t)) === "validation").length;
    expect(held).toBeGreaterThan(30);
    expect(held).toBeLessThan(70);
  });

  const options = (split: "train" | "validation", seed: number) => ({
    tokenizer,
    split,
    seed,
    batches: 3,
    groupsPerBatch: 4,
    groupSize: 2,
  });
  const tasksOf = async (ds: ReturnType<typeof arithmeticDataset>) => {
    const out = [];
    for (let b = 0; b < ds.batches; b++)
      for (const g of ds.batch(b)) out.push(((await g.makeEnvs())[0] as ArithmeticEnv).task);
    return out;
  };

  it("the same seed gives the same tasks; validation tasks never appear in training", async () => {
    expect(await tasksOf(arithmeticDataset(options("train", 1)))).toEqual(
      await tasksOf(arithmeticDataset(options("train", 1))),
    );
    expect(await tasksOf(arithmeticDataset(options("train", 2)))).not.toEqual(
      await tasksOf(arithmeticDataset(options("train", 1))),
    );
    for (const t of await tasksOf(arithmeticDataset(options("train", 3))))
      expect(splitOf(arithmeticKey(t))).toBe("train");
    for (const t of await tasksOf(arithmeticDataset(options("validation", 3))))
      expect(splitOf(arithmeticKey(t))).toBe("validation");
  });

  it("rewards an exact answer, not a wrong one; malformed actions get the format penalty", async () => {
    const env = () => new ArithmeticEnv({ a: 17, b: 25, op: "+", answer: 42 }, tokenizer);
    const prompt = tokenizer.decode(modelInputTokens((await env().initialObservation()).observation));
    expect(prompt).toContain("What is 17 + 25?");
    expect((await env().step(say("42"))).reward).toBe(1);
    expect((await env().step(say(" 42 "))).reward).toBe(1);
    expect((await env().step(say("41"))).reward).toBe(0);
    for (const bad of [
      say("forty-two"),
      say(""),
      tokenizer.encode("42", { addSpecialTokens: false }),
      [end, end],
      [],
    ]) {
      const result = await env().step(bad);
      expect(result).toMatchObject({ reward: -0.1, done: true, metrics: { "format/malformed": 1 } });
    }
  });
});

describe("guess-number", () => {
  it("answers higher/lower, extends the context with the exact action, and pays more for fewer turns", async () => {
    const env = new GuessNumberEnv({ secret: 11, max: 16 }, tokenizer, { maxTurns: 4 });
    const first = (await env.initialObservation()).observation;
    const action = say("5");
    const turn1 = await env.step(action);
    expect(turn1.done).toBe(false);
    const next = modelInputTokens(turn1.nextObservation ?? first);
    const before = modelInputTokens(first);
    expect(next.slice(0, before.length)).toEqual(before);
    expect(next.slice(before.length, before.length + action.length)).toEqual(action);
    expect(tokenizer.decode(next.slice(before.length + action.length))).toContain("higher");
    expect((await env.step(say("14"))).nextObservation).toBeDefined();
    expect((await env.step(say("11"))).reward).toBeCloseTo(2 / 4);
    const fast = new GuessNumberEnv({ secret: 3, max: 16 }, tokenizer, { maxTurns: 4 });
    await fast.initialObservation();
    expect((await fast.step(say("3"))).reward).toBe(1);
  });

  it("runs out of turns with reward 0; a malformed guess ends with the penalty", async () => {
    const env = new GuessNumberEnv({ secret: 9, max: 16 }, tokenizer, { maxTurns: 2 });
    await env.initialObservation();
    await env.step(say("1"));
    expect(await env.step(say("2"))).toMatchObject({ reward: 0, done: true });
    const bad = new GuessNumberEnv({ secret: 9, max: 16 }, tokenizer);
    await bad.initialObservation();
    expect(await bad.step(say("nine"))).toMatchObject({ reward: GUESS_FORMAT_PENALTY, done: true });
  });

  it("tasks are deterministic per seed", async () => {
    const secrets = async (seed: number) => {
      const ds = guessNumberDataset({
        tokenizer,
        split: "train",
        seed,
        batches: 2,
        groupsPerBatch: 3,
        groupSize: 1,
      });
      const out = [];
      for (let b = 0; b < 2; b++)
        for (const g of ds.batch(b)) out.push(((await g.makeEnvs())[0] as GuessNumberEnv).task.secret);
      return out;
    };
    expect(await secrets(4)).toEqual(await secrets(4));
  });

  it("holds out one whole range for validation: every secret of 1–16, never drawn in training", async () => {
    const drawn = async (split: "train" | "validation") => {
      const ds = guessNumberDataset({
        tokenizer,
        split,
        seed: 1,
        batches: 1,
        groupsPerBatch: 2000,
        groupSize: 1,
      });
      const tasks = await Promise.all(
        ds.batch(0).map(async (g) => (await g.makeEnvs())[0] as GuessNumberEnv),
      );
      return new Set(tasks.map((env) => guessKey(env.task)));
    };
    const validation = await drawn("validation");
    const train = await drawn("train");
    expect(validation).toEqual(new Set(Array.from({ length: 16 }, (_, i) => `${i + 1}/16`)));
    expect(train.size).toBe(8 + 12 + 20 + 24);
    expect([...train].filter((key) => key.endsWith("/16"))).toEqual([]);
    expect(GUESS_RANGES).toContain(GUESS_VALIDATION_RANGE);
  });
});

describe("short runs with the real engine", () => {
  it("arithmetic LoRA RL: every trajectory records its snapshot version, which moves on after each update", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 1 });
    const sink = new MemorySink();
    const dataset = arithmeticDataset({
      tokenizer,
      split: "train",
      seed: 1,
      batches: 2,
      groupsPerBatch: 2,
      groupSize: 4,
    });
    await trainRl({
      trainingClient: tc,
      dataset,
      lossFn: "ppo",
      sink,
      seed: 1,
      advantages: { dropConstantGroups: false },
    });
    expect(sink.records.map((r) => r["policy/version"])).toEqual([2, 3]);
    const saved = await (await tc.saveWeightsForSampler("check")).result();
    const sampler = await tc.createSamplingClient(saved.handle);
    const groups = await rolloutGroups(dataset.batch(0), sampler, { policyVersion: saved.version, seed: 2 });
    for (const g of groups) for (const t of g.trajectories) expect(t.policyVersion).toBe(saved.version);
  });

  it("guess-number and nim self-play run through trainRl; nim evaluation yields only the learner's trajectories", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 2 });
    const guess = guessNumberDataset({
      tokenizer,
      split: "train",
      seed: 1,
      batches: 1,
      groupsPerBatch: 2,
      groupSize: 3,
      maxTurns: 3,
    });
    const sink = new MemorySink();
    await trainRl({
      trainingClient: tc,
      dataset: guess,
      lossFn: "importance_sampling",
      sink,
      seed: 1,
      advantages: { dropConstantGroups: false },
    });
    await trainRl({
      trainingClient: tc,
      dataset: nimSelfPlayDataset({ seed: 1, batches: 1, groupsPerBatch: 1, games: 2, lenient: true }),
      lossFn: "ppo",
      sink,
      seed: 1,
    });
    expect(sink.records).toHaveLength(2);
    const saved = await (await tc.saveWeightsForSampler("eval")).result();
    const sampler = await tc.createSamplingClient(saved.handle);
    const evalSet = nimEvaluationDataset({
      seed: 1,
      batches: 1,
      groupsPerBatch: 1,
      games: 3,
      lenient: true,
      opponent: "optimal",
    });
    const [group] = await rolloutGroups(evalSet.batch(0), sampler, { policyVersion: saved.version, seed: 1 });
    expect(group?.trajectories).toHaveLength(3);
  });

  it("nim: self-play starts from every pile of 1–10; evaluation plays the corpus's 7–10", async () => {
    const piles = async (dataset: ReturnType<typeof nimSelfPlayDataset>) => {
      const seen = new Set<number>();
      for (const group of dataset.batch(0)) {
        const [first] = await group.makeEnvs();
        const { observation } = (await first?.initialObservation()) ?? { observation: { chunks: [] } };
        const text = Buffer.from(modelInputTokens(observation)).toString("latin1");
        seen.add(Number(/^Nim (\d+) /.exec(text)?.[1]));
      }
      return [...seen].sort((a, b) => a - b);
    };
    const shape = { seed: 1, batches: 1, groupsPerBatch: 200, games: 1 };
    const all = Array.from({ length: 10 }, (_, i) => i + 1);
    expect(await piles(nimSelfPlayDataset(shape))).toEqual(all);
    expect(NIM_SELF_PLAY_PILES).toEqual({ minStones: 1, maxStones: 10 });
    expect(await piles(nimEvaluationDataset({ ...shape, opponent: "random" }))).toEqual([7, 8, 9, 10]);
  });

  it("nim: an illegal move ends the game and costs more than a loss", async () => {
    const dataset = nimEvaluationDataset({
      seed: 1,
      batches: 1,
      groupsPerBatch: 1,
      games: 1,
      opponent: "random",
    });
    const [env] = await (dataset.batch(0)[0] as EnvGroupBuilder).makeEnvs();
    await env?.initialObservation();
    const result = await env?.step([...Buffer.from("x")]);
    expect(result).toMatchObject({
      reward: NIM_ILLEGAL_PENALTY,
      done: true,
      metrics: { "game/illegal_move": 1 },
    });
    expect(NIM_ILLEGAL_PENALTY).toBeLessThan(-1);
  });
});
