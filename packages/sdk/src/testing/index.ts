// A tiny real model behind in-process clients, for the SDK's tests (no mocks).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";

export async function tinyService(): Promise<{
  service: InProcessServiceClient;
  cleanup: () => Promise<void>;
}> {
  const dir = await mkdtemp(path.join(tmpdir(), "ot-sdk-"));
  await writeTinyModel(path.join(dir, "model"), { ...TINY_MODEL, seed: 2 });
  const base = await loadBaseModel(path.join(dir, "model"), "tiny");
  const service = InProcessServiceClient.local([base], path.join(dir, "store"), "sdk", {
    kvCacheBytes: 8 << 20,
    blockSize: 4,
  });
  return { service, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
