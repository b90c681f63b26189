// C5 with the whole runtime: two adapters trained concurrently over one base and
// one sampler. Adapter A ends byte-identical (weights, AdamW moments, snapshot
// files) to A trained alone.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type BaseModel,
  InProcessServiceClient,
  type InProcessTrainingClient,
  loadBaseModel,
} from "@opentinker/engine";
import { hostValues, TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { type RendererTokenizer, trainRl } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arithmeticDataset } from "./arithmetic.ts";
import { guessNumberDataset } from "./guess-number.ts";

let dir: string;
let base: BaseModel;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-isolation-"));
  await writeTinyModel(path.join(dir, "model"), TINY_MODEL);
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function service(name: string): InProcessServiceClient {
  return InProcessServiceClient.local([base], path.join(dir, name), "isolation", {
    kvCacheBytes: 8 << 20,
    blockSize: 8,
  });
}

async function trainA(svc: InProcessServiceClient) {
  const tokenizer = base.tokenizer as RendererTokenizer;
  const tc = (await svc.createLoraTrainingClient({
    baseModel: "tiny",
    rank: 4,
    seed: 1,
  })) as InProcessTrainingClient;
  const dataset = arithmeticDataset({
    tokenizer,
    split: "train",
    seed: 3,
    batches: 3,
    groupsPerBatch: 2,
    groupSize: 4,
  });
  await trainRl({
    trainingClient: tc,
    dataset,
    lossFn: "ppo",
    seed: 5,
    advantages: { dropConstantGroups: false },
  });
  const saved = await (await tc.saveWeightsForSampler("final")).result();
  return { tc, record: await svc.registry.resolve(saved.handle) };
}

async function trainB(svc: InProcessServiceClient) {
  const tokenizer = base.tokenizer as RendererTokenizer;
  const tc = await svc.createLoraTrainingClient({ baseModel: "tiny", rank: 8, seed: 2, trainUnembed: true });
  const dataset = guessNumberDataset({
    tokenizer,
    split: "train",
    seed: 4,
    batches: 3,
    groupsPerBatch: 2,
    groupSize: 3,
    maxTurns: 2,
  });
  await trainRl({
    trainingClient: tc,
    dataset,
    lossFn: "importance_sampling",
    seed: 6,
    advantages: { dropConstantGroups: false },
  });
}

describe("two adapters over one base", () => {
  it("adapter A's weights, optimizer state and snapshot are byte-identical whether or not B trains beside it", async () => {
    const alone = await trainA(service("alone"));
    const shared = service("shared");
    const [together] = await Promise.all([trainA(shared), trainB(shared)]);
    const state = (tc: InProcessTrainingClient) =>
      tc.policy.tensors.map((t) => [
        t.name,
        Buffer.from(hostValues(tc.policy, t.value).buffer).toString("hex"),
        Buffer.from(hostValues(tc.policy, t.m).buffer).toString("hex"),
        Buffer.from(hostValues(tc.policy, t.v).buffer).toString("hex"),
      ]);
    expect(alone.tc.policy.step).toBeGreaterThan(0); // A really trained
    expect(together.tc.policy.step).toBe(alone.tc.policy.step);
    expect(state(together.tc)).toEqual(state(alone.tc));
    expect(together.record.checksum).toBe(alone.record.checksum);
    expect(together.record.version).toBe(alone.record.version);
  }, 120_000);
});
