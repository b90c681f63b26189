// Trains a LoRA adapter with trainRl on a toy task, in-process, in about a minute
// on two cores, printing the reward as it rises.
//   npm run example:rl [-- --model <hf dir>] [-- --steps 12]
// Without --model it writes a tiny random model (with a real tokenizer) first.
// The task: answer with one token whose id is below 141 (about half the tiny
// model's vocabulary), so the untrained policy starts near 50 %.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { modelInputFromTokens } from "@opentinker/protocol";
import { ConsoleSink, type Env, type EnvGroupBuilder, fanOut, JsonlSink, trainRl } from "@opentinker/sdk";

class LowTokenEnv implements Env {
  async initialObservation() {
    return { observation: modelInputFromTokens([10, 20, 30, 40]), stop: { stop: [], maxTokens: 1 } };
  }
  async step(action: number[]) {
    return { reward: (action[0] as number) < 141 ? 1 : 0, done: true };
  }
}

const { values } = parseArgs({
  options: { model: { type: "string" }, steps: { type: "string", default: "12" } },
});
const work = await mkdtemp(path.join(tmpdir(), "opentinker-example-"));
try {
  let modelDir = values.model;
  if (!modelDir) {
    modelDir = path.join(work, "model");
    await writeTinyModel(modelDir, { ...TINY_MODEL, seed: 2 });
  }
  const base = await loadBaseModel(modelDir, "toy");
  const service = InProcessServiceClient.local([base], path.join(work, "snapshots"), "example");
  const trainingClient = await service.createLoraTrainingClient({
    baseModel: "toy",
    rank: 8,
    trainUnembed: true,
    seed: 7,
  });
  const group: EnvGroupBuilder = { makeEnvs: async () => Array.from({ length: 8 }, () => new LowTokenEnv()) };
  const metricsFile = path.resolve("examples/out/rl-lora-toy.jsonl");
  const history = await trainRl({
    trainingClient,
    dataset: { batches: Number(values.steps), batch: () => [group, group, group, group] },
    lossFn: "ppo",
    adam: { learningRate: 5e-2 },
    advantages: { scaleByStd: true },
    sink: fanOut(
      new ConsoleSink({ keys: ["reward/mean", "loss/sum", "policy/version"], total: Number(values.steps) }),
      new JsonlSink(metricsFile),
    ),
    seed: 11,
  });
  const first = history[0]?.["reward/mean"] ?? 0;
  const last = history[history.length - 1]?.["reward/mean"] ?? 0;
  console.log(
    `reward ${first.toFixed(3)} → ${last.toFixed(3)} over ${history.length} steps; metrics in ${metricsFile}`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
