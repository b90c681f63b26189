// @opentinker/store: where snapshots, checkpoints and exported adapters live.
export { CachedStore, type CacheStats, cacheEntryFolder } from "./disk-cache.ts";
export { parseStoreTarget, readStoreEnv, type StoreEnv, type StoreTarget, ZStoreEnv } from "./env.ts";
export { LocalStore } from "./local-store.ts";
export {
  ChecksumMismatchError,
  checksumFiles,
  ObjectNotFoundError,
  type ObjectStore,
  type StoredObject,
} from "./object-store.ts";
export { type OpenStoreOptions, openStore } from "./open-store.ts";
export { isTransientStoreError, type RetryPolicy } from "./retry.ts";
