// A tiny real model behind in-process clients, for the SDK's tests (no mocks).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  InMemorySnapshotRegistry,
  InProcessServiceClient,
  LocalSnapshotStore,
  loadBaseModel,
} from "@opentinker/engine";
import { writeTinyModel } from "@opentinker/engine/testing";

export async function tinyService(): Promise<{
  service: InProcessServiceClient;
  cleanup: () => Promise<void>;
}> {
  const dir = await mkdtemp(path.join(tmpdir(), "ot-sdk-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 32,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 32,
    scale: 0.2,
    seed: 2,
  });
  const base = await loadBaseModel(path.join(dir, "model"), "tiny");
  const service = new InProcessServiceClient({
    baseModels: new Map([["tiny", base]]),
    store: new LocalSnapshotStore(path.join(dir, "store")),
    registry: new InMemorySnapshotRegistry(),
    team: "sdk",
    sampler: { kvCacheBytes: 8 << 20, blockSize: 4 },
  });
  return { service, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
