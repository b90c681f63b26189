import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { loadState, saveState, saveWeightsForSampler } from "./publish.ts";
import { InMemorySnapshotRegistry } from "./registry.ts";
import { ChecksumMismatchError, LocalSnapshotStore } from "./store.ts";

let dir: string;
let base: BaseModel;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-publish-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 16,
  });
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const spec = { rank: 2, alpha: 4, trainAttn: true, trainMlp: true, trainUnembed: false, seed: 3 };
const datum = buildSftDatum({ sequence: [1, 2, 3, 4], weights: [0, 1, 1, 1] });

describe("publishing and checkpoints through the store", () => {
  it("saveWeightsForSampler publishes versions 1, 2 with their own handles and checksums", async () => {
    const store = new LocalSnapshotStore(path.join(dir, "store1"));
    const registry = new InMemorySnapshotRegistry();
    const policy = createLoraPolicy(base, spec);
    const trainer = new Trainer(policy);
    const first = await saveWeightsForSampler(policy, store, registry, { team: "demo", adapter: "a" });
    trainer.forwardBackward([datum], "cross_entropy");
    trainer.optimStep({ learningRate: 1e-2 });
    const second = await saveWeightsForSampler(policy, store, registry, { team: "demo", adapter: "a" });
    expect([first.version, second.version]).toEqual([1, 2]);
    expect(first.handle).toBe("opentinker://demo/a/sampler/1");
    expect(second.checksum).not.toBe(first.checksum);
    expect(second.trainerStep).toBe(1);
    expect((await registry.latest("demo", "a"))?.handle).toBe(second.handle);
  });

  it("loadState restores a checkpoint and refuses one whose files were altered", async () => {
    const store = new LocalSnapshotStore(path.join(dir, "store2"));
    const policy = createLoraPolicy(base, spec);
    const trainer = new Trainer(policy);
    trainer.forwardBackward([datum], "cross_entropy");
    trainer.optimStep({ learningRate: 1e-2 });
    const saved = await saveState(policy, store, { team: "demo", adapter: "a" }, "step-1");
    const restored = createLoraPolicy(base, spec);
    await loadState(restored, store, saved);
    expect(restored.step).toBe(1);
    expect(restored.tensors.map((t) => Array.from(t.value))).toEqual(
      policy.tensors.map((t) => Array.from(t.value)),
    );
    await writeFile(path.join(saved.path, "training_state.safetensors"), "tampered");
    const untouched = createLoraPolicy(base, spec);
    await expect(loadState(untouched, store, saved)).rejects.toBeInstanceOf(ChecksumMismatchError);
    expect(untouched.step).toBe(0);
  });
});
