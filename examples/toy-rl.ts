// The toy RL task shared by the examples (in-process and remote): answer with
// one token whose id is below 141 (about half the tiny model's vocabulary), so
// the untrained policy starts near 50 %. The loop only sees the ServiceClient
// interface, so it runs unchanged in-process or against a server.
import { type AdamParamsInput, modelInputFromTokens, type ServiceClient } from "@opentinker/protocol";
import {
  type Env,
  type EnvGroupBuilder,
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
