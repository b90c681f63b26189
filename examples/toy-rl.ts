// The toy RL task shared by the examples (in-process and remote): answer with
// one token whose id is below 141 (about half the tiny model's vocabulary), so
// the untrained policy starts near 50 %. The loop only sees the ServiceClient
// interface, so it runs unchanged in-process or against a server.

import path from "node:path";
import { type AdamParamsInput, modelInputFromTokens, type ServiceClient } from "@opentinker/protocol";
import {
  ConsoleSink,
  type Env,
  type EnvGroupBuilder,
  fanOut,
  JsonlSink,
  type MetricsRecord,
  type MetricsSink,
  trainRl,
} from "@opentinker/sdk";

class LowTokenEnv implements Env {
  async initialObservation() {
    return { observation: modelInputFromTokens([10, 20, 30, 40]), stop: { stop: [], maxTokens: 1 } };
  }
  async step(action: number[]) {
    return { reward: (action[0] as number) < 141 ? 1 : 0, done: true };
  }
}

export async function toyRl(
  service: ServiceClient,
  options: {
    baseModel: string;
    steps: number;
    sink?: MetricsSink;
    adam?: AdamParamsInput;
    trainUnembed?: boolean;
  },
): Promise<MetricsRecord[]> {
  const trainingClient = await service.createLoraTrainingClient({
    baseModel: options.baseModel,
    rank: 8,
    trainUnembed: options.trainUnembed ?? true,
    seed: 7,
  });
  const group: EnvGroupBuilder = { makeEnvs: async () => Array.from({ length: 8 }, () => new LowTokenEnv()) };
  return trainRl({
    trainingClient,
    dataset: { batches: options.steps, batch: () => [group, group, group, group] },
    lossFn: "ppo",
    adam: options.adam ?? { learningRate: 5e-2 },
    advantages: { scaleByStd: true },
    ...(options.sink ? { sink: options.sink } : {}),
    seed: 11,
  });
}

/**
 * Runs the toy task as an example does: progress on stderr (a bar on a terminal,
 * else a line per step), metrics in examples/out/<name>.jsonl.
 */
export async function runToyRlExample(
  service: ServiceClient,
  options: { baseModel: string; steps: number; name: string },
): Promise<void> {
  const metricsFile = path.resolve(`examples/out/${options.name}.jsonl`);
  const history = await toyRl(service, {
    baseModel: options.baseModel,
    steps: options.steps,
    sink: fanOut(
      new ConsoleSink({
        keys: ["reward/mean", "loss/sum", "policy/version"],
        // A bar redraws itself with carriage returns: only for a terminal. A pipe or log gets a line per step.
        ...(process.stderr.isTTY ? { total: options.steps } : {}),
      }),
      new JsonlSink(metricsFile),
    ),
  });
  const first = history[0]?.["reward/mean"] ?? 0;
  const last = history[history.length - 1]?.["reward/mean"] ?? 0;
  console.log(
    `reward ${first.toFixed(3)} → ${last.toFixed(3)} over ${history.length} steps; metrics in ${metricsFile}`,
  );
}
