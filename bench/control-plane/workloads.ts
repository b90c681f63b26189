// The calls the bench makes, each through the REST API and straight on an
// in-process engine over the same model: the same prompt, parameters and datum.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import {
  type Datum,
  float32Tensor,
  int64Tensor,
  modelInputFromTokens,
  type SamplingParamsInput,
  type TrainingClient,
} from "@opentinker/protocol";
import { BASE, type BenchControlPlane, type CallTiming } from "./control-plane.ts";
import { timed } from "./stats.ts";
import type { Teardown } from "./teardown.ts";

const PROMPT = [10, 11, 12, 13, 14, 15, 16, 17];
const PARAMS: SamplingParamsInput = { maxTokens: 8, temperature: 1, seed: 1 };
const DATUM: Datum = {
  modelInput: modelInputFromTokens(PROMPT),
  lossFnInputs: {
    targetTokens: int64Tensor([11, 12, 13, 14, 15, 16, 17, 18]),
    weights: float32Tensor(PROMPT.map(() => 1)),
  },
};

/** One kind of call, through the control plane and straight on the engine. */
export interface Workload {
  name: string;
  /** Client `c`'s call through the REST API. */
  viaApi(c: number): Promise<CallTiming>;
  /** Client `c`'s same call in-process: milliseconds. */
  inProcess(c: number): Promise<number>;
}

export async function sampleWorkload(
  cp: BenchControlPlane,
  service: InProcessServiceClient,
): Promise<Workload> {
  const prompt = modelInputFromTokens(PROMPT);
  const body = { policy: { baseModel: BASE }, prompt, numSamples: 1, params: PARAMS };
  const sampler = await service.createSamplingClient({ baseModel: BASE });
  return {
    name: "sample",
    viaApi: () => cp.call("/v1/sampling/sample", body),
    inProcess: () => timed(async () => (await sampler.sample(prompt, 1, PARAMS)).result()),
  };
}

/** forwardBackward on one adapter per client (an adapter's training calls run one at a time). */
export async function trainingWorkload(
  cp: BenchControlPlane,
  service: InProcessServiceClient,
  clients: number,
): Promise<Workload> {
  const lora = { baseModel: BASE, rank: 8, alpha: 32, seed: 0 };
  const adapters: string[] = [];
  const trainers: TrainingClient[] = [];
  for (let i = 0; i < clients; i++) {
    adapters.push((await cp.post<{ id: string }>("/v1/adapters", { ...lora, name: `bench-${i}` })).id);
    trainers.push(await service.createLoraTrainingClient(lora));
  }
  const at = <T>(list: T[], c: number) => list[c] as T;
  return {
    name: "forwardBackward",
    viaApi: (c) =>
      cp.call("/v1/training/forward-backward", {
        adapterId: at(adapters, c),
        data: [DATUM],
        lossFn: "cross_entropy",
      }),
    inProcess: (c) =>
      timed(async () => (await at(trainers, c).forwardBackward([DATUM], "cross_entropy")).result()),
  };
}

/** The engine in this process, over the control plane's model, with its snapshots in a temporary directory. */
export async function inProcessService(cp: BenchControlPlane, teardown: Teardown) {
  const dir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-store-"));
  teardown.defer("remove the in-process store", () => rm(dir, { recursive: true, force: true }));
  return InProcessServiceClient.local([cp.base], dir, "bench");
}
