// A worker's disk cache in front of a real S3 server: downloads kept within the
// byte budget (least recently used evicted), a damaged entry read again, and
// what the worker itself stored served without a download.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CachedStore, cacheEntryFolder } from "./disk-cache.ts";
import { readStoreEnv } from "./env.ts";
import type { ObjectStore, StoredObject } from "./object-store.ts";
import { openStore } from "./open-store.ts";
import { type S3TestServer, startS3Server } from "./testing/index.ts";

const KiB = 1024;
let server: S3TestServer;
let dir: string;

beforeAll(async () => {
  server = await startS3Server();
  dir = await mkdtemp(path.join(tmpdir(), "ot-cache-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const files = (seed: number, bytes = 100 * KiB) => new Map([["model.bin", new Uint8Array(bytes).fill(seed)]]);

async function stores(name: string, budgetBytes: number): Promise<{ s3: ObjectStore; cached: CachedStore }> {
  const s3 = await openStore(readStoreEnv(server.env(name)), { dataDir: path.join(dir, name) });
  return { s3, cached: new CachedStore(s3, path.join(dir, name, "cache"), budgetBytes) };
}

describe("the disk cache", () => {
  it("keeps downloads within its byte budget, evicting the least recently used", async () => {
    const { s3, cached } = await stores("budget", 250 * KiB);
    const stored: StoredObject[] = [];
    for (let i = 0; i < 3; i++) stored.push(await s3.put(`t/a/sampler/${i}`, files(i)));
    const [a, b, c] = stored as [StoredObject, StoredObject, StoredObject];
    await cached.get(a.path, a.checksum);
    await cached.get(b.path, b.checksum);
    await cached.get(a.path, a.checksum); // a is now the most recently used
    expect(cached.stats()).toMatchObject({ hits: 1, misses: 2, entries: 2, bytes: 200 * KiB });
    await cached.get(c.path, c.checksum); // b goes
    expect(cached.stats()).toMatchObject({ entries: 2, bytes: 200 * KiB });
    expect(cached.stats().bytes).toBeLessThanOrEqual(250 * KiB);
    const held = await readdir(cached.dir);
    expect(held.sort()).toEqual(
      [a, c].map((o) => path.basename(cacheEntryFolder(cached.dir, o.path))).sort(),
    );
    const before = cached.stats();
    expect((await cached.get(b.path, b.checksum)).get("model.bin")?.[0]).toBe(1);
    expect(cached.stats().misses).toBe(before.misses + 1);
    // An object larger than the whole budget is served but never kept.
    const big = await s3.put("t/a/sampler/big", files(9, 300 * KiB));
    await cached.get(big.path, big.checksum);
    expect(await readdir(cached.dir)).not.toContain(path.basename(cacheEntryFolder(cached.dir, big.path)));
  });

  it("a new process finds what an earlier one kept, oldest use first", async () => {
    const { s3, cached } = await stores("restart", 250 * KiB);
    const a = await s3.put("t/a/sampler/a", files(1));
    const b = await s3.put("t/a/sampler/b", files(2));
    await cached.get(a.path, a.checksum);
    await new Promise((r) => setTimeout(r, 20));
    await cached.get(b.path, b.checksum);
    const again = new CachedStore(s3, cached.dir, 250 * KiB);
    await again.get(a.path, a.checksum);
    expect(again.stats()).toMatchObject({ hits: 1, misses: 0, entries: 2 });
    const c = await s3.put("t/a/sampler/c", files(3));
    await again.get(c.path, c.checksum); // b is the least recently used now
    expect(await readdir(again.dir)).not.toContain(path.basename(cacheEntryFolder(again.dir, b.path)));
  });

  it("reads a damaged entry from the store again", async () => {
    const { s3, cached } = await stores("damaged", 1024 * KiB);
    const a = await s3.put("t/a/state/a", files(4));
    await cached.get(a.path, a.checksum);
    await writeFile(path.join(cacheEntryFolder(cached.dir, a.path), "model.bin"), "damaged");
    const read = await cached.get(a.path, a.checksum);
    expect(read.get("model.bin")?.byteLength).toBe(100 * KiB);
    expect(cached.stats()).toMatchObject({ hits: 0, misses: 2 });
    expect(await cached.get(a.path, a.checksum)).toEqual(read);
    expect(cached.stats().hits).toBe(1);
  });

  it("serves what this process stored without a download, and forgets what it deletes", async () => {
    const { cached } = await stores("through", 1024 * KiB);
    const a = await cached.put("t/a/sampler/a", files(5));
    await cached.get(a.path, a.checksum);
    expect(cached.stats()).toMatchObject({ hits: 1, misses: 0, entries: 1 });
    await cached.delete(a.path);
    expect(cached.stats()).toMatchObject({ entries: 0, bytes: 0 });
    await expect(cached.get(a.path, a.checksum)).rejects.toThrow(/not found/);
  });
});
