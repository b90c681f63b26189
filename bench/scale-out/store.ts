// Snapshot publish (put) and load (get) latency, local folder against the
// S3-compatible store (s3rver on loopback: the protocol's cost on this
// machine, not a network's), and a load served by a worker's disk cache.
// Sides run interleaved, round by round, each with a fresh object.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CachedStore, LocalStore, type ObjectStore, openStore, readStoreEnv } from "@opentinker/store";
import { startS3Server } from "@opentinker/store/testing";
import { median, pairedRatio } from "../../packages/engine/bench/timing.ts";
import { progress, round, timed } from "../control-plane/stats.ts";
import type { Teardown } from "../control-plane/teardown.ts";

export interface StoreOptions {
  sizesMb: number[];
  rounds: number;
}

/** A snapshot's files: its weights (`mb` MiB of varied bytes) and a small config. */
function snapshot(mb: number, seed: number): Map<string, Uint8Array> {
  const weights = new Uint8Array(mb * 1024 * 1024);
  for (let i = 0; i < weights.length; i += 4096) weights[i] = (i / 4096 + seed) & 0xff;
  return new Map([
    ["adapter_config.json", new TextEncoder().encode(JSON.stringify({ r: 8, lora_alpha: 16, seed }))],
    ["adapter_model.safetensors", weights],
  ]);
}

const SIDES = ["local", "s3", "s3-cache-hit"] as const;
type Side = (typeof SIDES)[number];

export async function benchStore(options: StoreOptions, teardown: Teardown) {
  const dir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-store-"));
  teardown.defer("remove the store bench's folder", () => rm(dir, { recursive: true, force: true }));
  const s3 = await startS3Server();
  teardown.defer("stop the S3 server", () => s3.stop());
  const s3Store = await openStore(readStoreEnv(s3.env("bench")), { dataDir: dir });
  const stores: Record<Side, ObjectStore> = {
    local: new LocalStore(path.join(dir, "local")),
    s3: s3Store,
    // Its own store instance, so an object it wrote is a hit when read back.
    "s3-cache-hit": new CachedStore(s3Store, path.join(dir, "cache"), 4 * 1024 ** 3),
  };
  const results = [];
  for (const mb of options.sizesMb) {
    const put: Record<Side, number[]> = { local: [], s3: [], "s3-cache-hit": [] };
    const get: Record<Side, number[]> = { local: [], s3: [], "s3-cache-hit": [] };
    for (let r = 0; r < options.rounds; r++) {
      progress(`store: ${mb} MiB, round ${r + 1}/${options.rounds}`);
      for (const side of SIDES) {
        const files = snapshot(mb, r);
        const store = stores[side];
        let stored: Awaited<ReturnType<ObjectStore["put"]>> | undefined;
        put[side].push(
          await timed(async () => {
            stored = await store.put(`t/a/sampler/${mb}mb-${r}-${side}`, files);
          }),
        );
        const { path: objectPath, checksum } = stored as NonNullable<typeof stored>;
        get[side].push(await timed(() => store.get(objectPath, checksum)));
        await store.delete(objectPath);
      }
    }
    const summary = (samples: Record<Side, number[]>) =>
      Object.fromEntries(
        SIDES.map((side) => [
          side,
          {
            p50Ms: round(median(samples[side])),
            msPerMb: round(median(samples[side]) / mb),
            n: samples[side].length,
          },
        ]),
      );
    results.push({
      sizeMb: mb,
      publish: summary(put),
      load: summary(get),
      ratioS3OverLocal: {
        publish: round(pairedRatio(put.s3, put.local)),
        load: round(pairedRatio(get.s3, get.local)),
        loadCacheHit: round(pairedRatio(get["s3-cache-hit"], get.local)),
      },
    });
  }
  return { server: "s3rver 3.7.1 on 127.0.0.1 (its objects on this machine's disk)", partMb: 16, results };
}
