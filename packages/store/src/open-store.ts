// The one place a process turns its settings into an object store: the local
// folder (the default, `<data dir>/store`), or an S3-compatible bucket, which
// workers read through a local disk cache.
import path from "node:path";
import { CachedStore } from "./disk-cache.ts";
import type { StoreEnv } from "./env.ts";
import { LocalStore } from "./local-store.ts";
import type { ObjectStore } from "./object-store.ts";

export interface OpenStoreOptions {
  /** The process's data directory (OPENTINKER_DATA_DIR): the local store and the cache live under it. */
  dataDir: string;
  /** Keep downloaded objects on local disk within OPENTINKER_STORE_CACHE_MB (workers). */
  cache?: boolean;
}

export async function openStore(env: StoreEnv, options: OpenStoreOptions): Promise<ObjectStore> {
  const target = env.OPENTINKER_STORE;
  if (target.kind === "local") return new LocalStore(target.root ?? path.join(options.dataDir, "store"));
  // Loaded only when used, so the local default never loads the AWS SDK.
  const { createS3Client, S3Store } = await import("./s3-store.ts");
  const store = new S3Store({
    client: createS3Client(env),
    bucket: target.bucket,
    prefix: target.prefix,
    partBytes: env.OPENTINKER_STORE_PART_MB * 1024 * 1024,
  });
  if (!options.cache || env.OPENTINKER_STORE_CACHE_MB === 0) return store;
  return new CachedStore(
    store,
    path.join(options.dataDir, "store-cache"),
    env.OPENTINKER_STORE_CACHE_MB * 1024 * 1024,
  );
}
