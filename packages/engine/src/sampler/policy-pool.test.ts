import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { bytesPerElement } from "@opentinker/kernels";
import { ChecksumMismatchError, LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { frozenParams } from "../policy/frozen.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { PolicyBudgetError, PolicyPool } from "./policy-pool.ts";

let dir: string;
let base: BaseModel;
let store: LocalStore;
let registry: InMemorySnapshotRegistry;
const handles: string[] = [];
let adapterBytes = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-pool-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 16,
  });
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
  store = new LocalStore(path.join(dir, "snapshots"));
  registry = new InMemorySnapshotRegistry();
  for (let i = 0; i < 3; i++) {
    const policy = createLoraPolicy(base, {
      rank: 2,
      alpha: 4,
      trainAttn: true,
      trainMlp: false,
      trainUnembed: false,
      seed: i,
    });
    adapterBytes = policy.tensors.reduce(
      (sum, t) => sum + t.value.length * bytesPerElement(t.value.dtype),
      0,
    );
    const stored = await store.put(`t/a${i}/1`, snapshotFiles(policy));
    handles.push((await registry.publish("t", `a${i}`, stored, 0)).handle);
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the policy pool", () => {
  it("evicts the least recently used version to stay within its byte budget", async () => {
    const pool = new PolicyPool(base, store, registry, adapterBytes * 2);
    for (const h of handles.slice(0, 2)) pool.release(await pool.acquire(h));
    pool.release(await pool.acquire(handles[0] as string)); // a0 is now the most recent
    pool.release(await pool.acquire(handles[2] as string));
    expect([
      pool.has(handles[0] as string),
      pool.has(handles[1] as string),
      pool.has(handles[2] as string),
    ]).toEqual([true, false, true]);
    expect(pool.loadedBytes).toBeLessThanOrEqual(adapterBytes * 2);
  });

  it("gives an evicted version's buffers back to the device: a LoRA adapter's and a full model's", async () => {
    const full = createFullPolicy(base);
    const stored = await store.put("t/full/1", snapshotFiles(full));
    const fullHandle = (await registry.publish("t", "full", stored, 0)).handle;
    const fullBytes = full.tensors.reduce((sum, t) => sum + t.value.length * 4, 0);
    const pool = new PolicyPool(base, store, registry, fullBytes);
    const lora = await pool.acquire(handles[0] as string);
    pool.release(lora);
    const model = await pool.acquire(fullHandle);
    pool.release(model);
    expect(pool.has(handles[0] as string)).toBe(false);
    const a = lora.lora?.layers[0]?.q?.a;
    if (!a) throw new Error("the adapter has no q_proj A");
    expect(() => base.backend.download(a)).toThrow(/used after it was freed/);
    pool.release(await pool.acquire(handles[1] as string));
    const table = model.params?.embed.table;
    if (!table) throw new Error("the full model has no embedding");
    expect(() => base.backend.download(table)).toThrow(/used after it was freed/);
    // The base's own weights are untouched.
    expect(base.backend.download(frozenParams(base).embed.table).length).toBeGreaterThan(0);
  });

  it("never evicts a version in use: a load waits until one is released", async () => {
    const pool = new PolicyPool(base, store, registry, adapterBytes);
    const pinned = await pool.acquire(handles[0] as string);
    let loaded = false;
    const waiting = pool.acquire(handles[1] as string).then((e) => {
      loaded = true;
      return e;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(loaded).toBe(false);
    expect(pool.has(handles[0] as string)).toBe(true);
    pool.release(pinned);
    const entry = await waiting;
    expect(entry.key).toBe(handles[1]);
    expect(pool.has(handles[0] as string)).toBe(false);
  });

  it("a version larger than the whole budget is refused by name", async () => {
    const pool = new PolicyPool(base, store, registry, 10);
    await expect(pool.acquire(handles[0] as string)).rejects.toBeInstanceOf(PolicyBudgetError);
  });

  it("a snapshot whose files changed on disk fails its checksum instead of loading", async () => {
    const record = await registry.resolve(handles[2] as string);
    const forged = new InMemorySnapshotRegistry();
    const stored = { path: record.path, checksum: `sha256:${"0".repeat(64)}`, sizeBytes: 0 };
    const handle = (await forged.publish("t", "forged", stored, 0)).handle;
    const pool = new PolicyPool(base, store, forged, 1 << 20);
    await expect(pool.acquire(handle)).rejects.toBeInstanceOf(ChecksumMismatchError);
  });
});
