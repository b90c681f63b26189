// bf16 base weights: the sampler and the trainer hold the same bf16 base, so a
// snapshot's sampled logprobs still equal the trainer's; what trains stays f32.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { frozenParams } from "../policy/frozen.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { Sampler } from "./sampler.ts";

const PROMPT = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190];
const LORA = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: true, seed: 1 };

let dir: string;
let base: BaseModel;
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();
/** Policy key ("base" or a handle) → a trainer over the same weights. */
const trainers = new Map<string, Trainer>();
const policies = new Map<string, Policy>();

function datumOf(tokens: number[]) {
  return buildSftDatum({ sequence: tokens, weights: tokens.map((_, i) => (i >= PROMPT.length ? 1 : 0)) });
}

async function publish(policy: Policy, name: string, target: number[]): Promise<string> {
  const trainer = new Trainer(policy);
  for (let s = 0; s < 10; s++) {
    trainer.forwardBackward([datumOf([...PROMPT, ...target])], "cross_entropy");
    trainer.optimStep({ learningRate: 2e-2 });
  }
  const stored = await store.put(`demo/${name}/1`, snapshotFiles(policy));
  const { handle } = await registry.publish("demo", name, stored, policy.step);
  trainers.set(handle, trainer);
  policies.set(handle, policy);
  return handle;
}

let loraHandle: string;
let fullHandle: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-sampler-bf16-"));
  // A bf16 checkpoint, as most published ones are, read as it is stored.
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 4,
    scale: 0.3,
    dtype: "BF16",
    tieWordEmbeddings: false,
  });
  base = await loadBaseModel(path.join(dir, "model"), "tiny", { weightDtype: "bf16" });
  store = new LocalStore(path.join(dir, "snapshots"));
  trainers.set("base", new Trainer(createLoraPolicy(base, { ...LORA, seed: 9 })));
  loraHandle = await publish(createLoraPolicy(base, LORA), "lora", [7, 8, 9]);
  fullHandle = await publish(createFullPolicy(base), "full", [200, 201, 202]);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("bf16 base weights", () => {
  it("the base is held in bf16; adapters and full-parameter masters are f32", () => {
    expect(base.weights.layers[0]?.qProj).toBeInstanceOf(Uint16Array);
    expect(base.weights.lmHead).toBeInstanceOf(Uint16Array);
    const onDevice = frozenParams(base);
    expect(onDevice.layers[0]?.q.weight.dtype).toBe("bf16");
    expect(onDevice.unembed.weight.dtype).toBe("bf16");
    for (const handle of [loraHandle, fullHandle]) {
      const tensors = policies.get(handle)?.tensors ?? [];
      expect(tensors.length).toBeGreaterThan(0);
      for (const t of tensors) expect(t.value.dtype, t.name).toBe("f32");
    }
  });

  it("sampled and computed logprobs equal the trainer's forward within 1e-4 (base, LoRA, full-parameter)", async () => {
    const s = new Sampler({ base, store, registry, kvCacheBytes: 8 << 20, blockSize: 4 });
    for (const policy of ["base", loraHandle, fullHandle]) {
      const out = await s.sample(policy, PROMPT, 1, { maxTokens: 6, temperature: 1, seed: 3 });
      const seq = out.sequences[0];
      if (!seq) throw new Error("no sequence");
      const sequence = [...PROMPT, ...seq.tokens];
      const trained =
        (trainers.get(policy) as Trainer).forward([datumOf(sequence)], "cross_entropy").lossFnOutputs[0]
          ?.logprobs?.data ?? [];
      const own = trained.slice(PROMPT.length - 1);
      expect(own).toHaveLength(seq.logprobs.length);
      seq.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - (own[t] as number)), `${policy} token ${t}`).toBeLessThan(1e-4);
      });
      const computed = await s.computeLogprobs(policy, sequence);
      computed.slice(1).forEach((lp, i) => {
        expect(Math.abs((lp as number) - (trained[i] as number)), `${policy} position ${i + 1}`).toBeLessThan(
          1e-4,
        );
      });
    }
  });

  it("training over the bf16 base steers the samples", async () => {
    const s = new Sampler({ base, store, registry, kvCacheBytes: 8 << 20, blockSize: 4 });
    const greedy = async (policy: string) =>
      (await s.sample(policy, PROMPT, 1, { maxTokens: 3, temperature: 0 })).sequences[0]?.tokens;
    expect(await greedy(loraHandle)).toEqual([7, 8, 9]);
    expect(await greedy(fullHandle)).toEqual([200, 201, 202]);
  });
});
