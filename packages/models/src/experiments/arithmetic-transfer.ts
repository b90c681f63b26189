// node --import tsx packages/models/src/experiments/arithmetic-transfer.ts [seed] [steps] [model NAME|DIR]
// A diagnostic for docs/results.md (arithmetic): for every problem of the
// environment (operands 0–12, three operators) it scores the right answer
// under the policy by its exact probability (teacher-forced, the answer and
// the end of the turn) and whether the right answer is the most likely of the
// seven answers within ±3, by split and operator; first for the base model,
// then after `steps` steps of the arithmetic-lora-rl setting. RL sharpens what
// the policy already prefers, so a held-out problem whose most likely answer is
// wrong is one that training on other problems does not fix.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import {
  ArithmeticEnv,
  type ArithmeticTask,
  arithmeticKey,
  everyArithmeticTask,
  splitOf,
} from "@opentinker/envs";
import { appendTokens, modelInputTokens, type SamplingClient } from "@opentinker/protocol";
import { type RendererTokenizer, trainRl } from "@opentinker/sdk";
import { DEFAULT_TEXT_MODEL } from "../registry.ts";
import { loadExperimentModel } from "./run.ts";
import { SETTINGS } from "./settings.ts";

const seed = Number(process.argv[2] ?? 4);
const steps = Number(process.argv[3] ?? 300);
const setting = SETTINGS["arithmetic-lora-rl"];
if (!setting || !Number.isInteger(seed) || !Number.isInteger(steps) || steps < 0)
  throw new RangeError("usage: arithmetic-transfer.ts [seed] [steps ≥ 0] [model NAME|DIR]");

const OFFSETS = [-3, -2, -1, 0, 1, 2, 3] as const;

/** Log-probability of `reply` (then the end of the turn) after the task's prompt. */
async function replyLogprob(
  client: SamplingClient,
  tokenizer: RendererTokenizer,
  task: ArithmeticTask,
  reply: number,
) {
  const { observation } = await new ArithmeticEnv(task, tokenizer).initialObservation();
  const prompt = modelInputTokens(observation).length;
  const answer = tokenizer.encode(`${reply}<|im_end|>`, { addSpecialTokens: false });
  const logprobs = await (await client.computeLogprobs(appendTokens(observation, answer))).result();
  return logprobs.slice(prompt).reduce((sum: number, lp) => sum + (lp ?? 0), 0);
}

/** Per split and operator: mean probability of the right answer, and how often it is the likeliest of ±3. */
async function transfer(client: SamplingClient, tokenizer: RendererTokenizer) {
  const by = new Map<string, { probability: number; likeliest: number; problems: number }>();
  for (const task of everyArithmeticTask()) {
    const scores = await Promise.all(
      OFFSETS.map((d) => replyLogprob(client, tokenizer, task, task.answer + d)),
    );
    const right = scores[OFFSETS.indexOf(0)] ?? Number.NEGATIVE_INFINITY;
    const key = `${splitOf(arithmeticKey(task))} ${task.op}`;
    const e = by.get(key) ?? { probability: 0, likeliest: 0, problems: 0 };
    e.probability += Math.exp(right);
    e.likeliest += right >= Math.max(...scores) ? 1 : 0;
    e.problems++;
    by.set(key, e);
  }
  const rows = [...by].sort(([a], [b]) => a.localeCompare(b));
  return Object.fromEntries(
    rows.map(([key, e]) => [
      key,
      {
        problems: e.problems,
        pRight: e.probability / e.problems,
        rightIsLikeliest: e.likeliest / e.problems,
      },
    ]),
  );
}

const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-arithmetic-"));
try {
  const base = await loadExperimentModel(process.argv[4] ?? DEFAULT_TEXT_MODEL, scratch);
  const tokenizer = base.tokenizer as RendererTokenizer;
  const svc = InProcessServiceClient.local([base], scratch, "diagnostic");
  const before = await transfer(await svc.createSamplingClient({ baseModel: base.name }), tokenizer);
  const tc = await svc.createLoraTrainingClient({ baseModel: base.name, rank: 16, seed });
  await trainRl({
    trainingClient: tc,
    dataset: setting.train({ tokenizer, seed, steps }),
    lossFn: setting.lossFn,
    adam: { learningRate: setting.learningRate },
    lrSchedule: setting.lrSchedule ?? "constant",
    seed,
  });
  const saved = await (await tc.saveWeightsForSampler("diagnostic")).result();
  const after = await transfer(await tc.createSamplingClient(saved.handle), tokenizer);
  console.log(JSON.stringify({ model: base.name, seed, steps, before, after }, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
