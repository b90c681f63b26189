import { rm } from "node:fs/promises";
import type { InProcessServiceClient } from "@opentinker/engine";
import { modelInputTokens } from "@opentinker/protocol";
import { MemorySink, type RendererTokenizer, trainRl, trajectoryDatums } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CALCULATOR_CALL_COST,
  CalculatorEnv,
  type CalculatorTask,
  calculatorDataset,
  calculatorKey,
  parseCall,
} from "./calculator.ts";
import { splitOf } from "./split.ts";
import { openTinyService } from "./testing/index.ts";

let dir: string;
let tokenizer: RendererTokenizer;
let service: InProcessServiceClient;
let say: (text: string) => number[];

beforeAll(async () => {
  ({ dir, tokenizer, service, say } = await openTinyService("calculator"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
const large: CalculatorTask = { a: 347, b: 58, op: "*", answer: 20126, size: "large" };
const small: CalculatorTask = { a: 3, b: 4, op: "+", answer: 7, size: "small" };

async function started(task: CalculatorTask, options = {}) {
  const env = new CalculatorEnv(task, tokenizer, options);
  const first = (await env.initialObservation()).observation;
  return { env, first };
}

describe("calculator", () => {
  it("parses a call and nothing else", () => {
    expect(parseCall("calc 347 * 58")).toEqual({ a: 347, op: "*", b: 58 });
    expect(parseCall(" calc 12-3 ")).toEqual({ a: 12, op: "-", b: 3 });
    for (const text of ["calc", "calc 1 / 2", "20126", "calc 1 * 2 * 3", "calculate 1 + 2"])
      expect(parseCall(text)).toBeNull();
  });

  it("runs a call, replies in a tool turn that extends the context, and charges for it", async () => {
    const { env, first } = await started(large);
    const prompt = tokenizer.decode(modelInputTokens(first));
    expect(prompt).toContain("<|im_start|>system\nYou have a calculator");
    expect(prompt).toContain("What is 347 * 58?");
    const call = say("calc 347 * 58");
    const turn = await env.step(call);
    expect(turn.done).toBe(false);
    const next = modelInputTokens(turn.nextObservation ?? first);
    const before = modelInputTokens(first);
    expect(next.slice(0, before.length)).toEqual(before);
    expect(next.slice(before.length, before.length + call.length)).toEqual(call);
    expect(tokenizer.decode(next.slice(before.length + call.length))).toBe(
      "\n<|im_start|>tool\n20126<|im_end|>\n<|im_start|>assistant\n",
    );
    const answer = await env.step(say("20126"));
    expect(answer).toMatchObject({
      done: true,
      metrics: { correct: 1, "tool/calls": 1, "large/called": 1, "large/correct": 1 },
    });
    expect(answer.reward).toBeCloseTo(1 - CALCULATOR_CALL_COST);
  });

  it("evaluates what the model wrote, so a miscopied call gives a wrong result", async () => {
    const { env } = await started(large);
    const turn = await env.step(say("calc 347 * 59"));
    expect(tokenizer.decode(modelInputTokens(turn.nextObservation ?? { chunks: [] }))).toContain(
      "tool\n20473",
    );
    expect(await env.step(say("20473"))).toMatchObject({
      reward: -CALCULATOR_CALL_COST,
      metrics: { correct: 0 },
    });
  });

  it("pays 1 for a right answer without a call, 0 for a wrong one, the penalty for a malformed one", async () => {
    const right = await started(small);
    expect(await right.env.step(say("7"))).toMatchObject({
      reward: 1,
      metrics: { "small/called": 0, "tool/calls": 0, "format/malformed": 0 },
    });
    const wrong = await started(small);
    expect((await wrong.env.step(say("8"))).reward).toBe(0);
    const bad = await started(small, { formatPenalty: -0.5 });
    expect(await bad.env.step(say("seven"))).toMatchObject({
      reward: -0.5,
      metrics: { "format/malformed": 1 },
    });
    const cut = await started(small);
    expect((await cut.env.step(tokenizer.encode("calc 3 + 4", { addSpecialTokens: false }))).done).toBe(true);
  });

  it("ends an episode that calls past its limit, charging every call", async () => {
    const { env } = await started(large, { maxCalls: 1, callCost: 0.2 });
    expect((await env.step(say("calc 347 * 58"))).done).toBe(false);
    expect(await env.step(say("calc 347 * 58"))).toMatchObject({
      done: true,
      metrics: { "tool/over_limit": 1, "tool/calls": 2, correct: 0 },
    });
  });

  it("holds out large problems by key; small facts are in both splits", async () => {
    const tasks = (split: "train" | "validation") => {
      const ds = calculatorDataset({
        tokenizer,
        split,
        seed: 1,
        batches: 1,
        groupsPerBatch: 400,
        groupSize: 1,
      });
      return Promise.all(ds.batch(0).map(async (g) => ((await g.makeEnvs())[0] as CalculatorEnv).task));
    };
    const train = await tasks("train");
    const validation = await tasks("validation");
    for (const t of train.filter((t) => t.size === "large")) expect(splitOf(calculatorKey(t))).toBe("train");
    for (const t of validation.filter((t) => t.size === "large"))
      expect(splitOf(calculatorKey(t))).toBe("validation");
    for (const t of [...train, ...validation]) {
      const [lo, hi] = t.size === "small" ? [0, 9] : t.op === "*" ? [10, 99] : [100, 999];
      for (const n of [t.a, t.b]) expect(n >= lo && n <= hi).toBe(true);
    }
    // Half of each split is small: validation's large problems are not crowded out by the facts.
    const share = (ts: CalculatorTask[]) => ts.filter((t) => t.size === "small").length / ts.length;
    for (const ts of [train, validation]) {
      expect(share(ts)).toBeGreaterThan(0.43);
      expect(share(ts)).toBeLessThan(0.57);
    }
  });

  it("trains as one sequence where the tool's reply is context, never a trained token", async () => {
    const { env, first } = await started(large);
    const call = say("calc 347 * 58");
    const turn = await env.step(call);
    const answer = say("20126");
    const result = await env.step(answer);
    const transition = (observation: typeof first, action: number[], last: boolean) => ({
      observation,
      actionTokens: action,
      actionLogprobs: action.map(() => -1),
      reward: last ? result.reward : 0,
      done: last,
      metrics: last ? (result.metrics ?? {}) : {},
    });
    const trajectory = {
      transitions: [transition(first, call, false), transition(turn.nextObservation ?? first, answer, true)],
      policyVersion: 1,
    };
    const datums = trajectoryDatums({ trajectory, turnAdvantages: [1, 1] });
    expect(datums).toHaveLength(1);
    const mask = datums[0]?.lossFnInputs.mask?.data ?? [];
    expect(mask.filter((m) => m === 1)).toHaveLength(call.length + answer.length);

    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 3 });
    const sink = new MemorySink();
    await trainRl({
      trainingClient: tc,
      dataset: calculatorDataset({
        tokenizer,
        split: "train",
        seed: 1,
        batches: 1,
        groupsPerBatch: 2,
        groupSize: 3,
      }),
      lossFn: "ppo",
      sink,
      seed: 1,
      advantages: { dropConstantGroups: false },
    });
    expect(sink.records[0]).toHaveProperty("env/tool/calls");
  });
});
