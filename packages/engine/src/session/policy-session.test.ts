import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum } from "@opentinker/protocol";
import { ChecksumMismatchError, LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { hostValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { PolicySession } from "./policy-session.ts";
import { InMemoryPolicyRegistry } from "./registry.ts";

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
const where = { teamId: "demo", team: "demo", adapter: "a" };
const datum = buildSftDatum({ sequence: [1, 2, 3, 4], weights: [0, 1, 1, 1] });

function backing(storeDir: string, snapshots = new InMemorySnapshotRegistry()) {
  return {
    store: new LocalStore(path.join(dir, storeDir)),
    registry: new InMemoryPolicyRegistry(snapshots),
  };
}

async function trained(session: PolicySession, steps = 1) {
  for (let i = 0; i < steps; i++) {
    await session.forwardBackward([datum], "cross_entropy");
    await session.optimStep({ learningRate: 1e-2 });
  }
}

const weights = (session: PolicySession) =>
  session.policy.tensors.map((t) => Array.from(hostValues(session.policy, t.value)));

describe("a policy session's snapshots and checkpoints", () => {
  it("publish publishes versions 1, 2 with their own handles and checksums", async () => {
    const snapshots = new InMemorySnapshotRegistry();
    const session = await PolicySession.open(
      createLoraPolicy(base, spec),
      where,
      backing("store1", snapshots),
    );
    const first = await session.publish();
    await trained(session);
    const second = await session.publish();
    expect([first.version, second.version]).toEqual([1, 2]);
    expect(first.handle).toBe("opentinker://demo/a/sampler/1");
    const [r1, r2] = [await snapshots.resolve(first.handle), await snapshots.resolve(second.handle)];
    expect(r2.checksum).not.toBe(r1.checksum);
    expect(r2.trainerStep).toBe(1);
    expect((await snapshots.latest("demo", "a"))?.handle).toBe(second.handle);
  });

  it("restore loads a checkpoint and refuses one whose files were altered", async () => {
    const b = backing("store2");
    const session = await PolicySession.open(createLoraPolicy(base, spec), where, b);
    await trained(session);
    const before = weights(session);
    const saved = await session.checkpoint("step-1");
    expect(saved).toEqual({ path: "opentinker://demo/a/state/step-1", step: 1 });
    await trained(session);
    await session.restore(saved.path);
    expect(session.policy.step).toBe(1);
    expect(weights(session)).toEqual(before);
    const stored = await b.registry.findCheckpoint(where, "step-1");
    await writeFile(path.join(stored?.path ?? "", "training_state.safetensors"), "tampered");
    await trained(session);
    await expect(session.restore(saved.path)).rejects.toBeInstanceOf(ChecksumMismatchError);
    expect(session.policy.step).toBe(2);
  });

  it("a session opens at its newest checkpoint; names are unique and paths are the policy's own", async () => {
    const b = backing("store3");
    const first = await PolicySession.open(createLoraPolicy(base, spec), where, b);
    await trained(first, 2);
    await first.checkpoint("two");
    await expect(first.checkpoint("two")).rejects.toThrow(/already has a checkpoint named "two"/);
    const reopened = await PolicySession.open(createLoraPolicy(base, spec), where, b);
    expect(reopened.policy.step).toBe(2);
    expect(weights(reopened)).toEqual(weights(first));
    await expect(reopened.restore("opentinker://demo/b/state/two")).rejects.toThrow(/not found/);
  });
});
