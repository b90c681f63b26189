import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalStore } from "./local-store.ts";
import { ChecksumMismatchError, ObjectNotFoundError } from "./object-store.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-local-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const files = new Map([
  ["b.bin", new Uint8Array([1, 2, 3])],
  ["a.json", new TextEncoder().encode("{}")],
]);

describe("the local store", () => {
  it("keeps an object as a folder, read back in name order and verified", async () => {
    const store = new LocalStore(path.join(dir, "s1"));
    const stored = await store.put("t/a/sampler/1", files);
    expect(stored.path).toBe(path.join(dir, "s1", "t/a/sampler/1"));
    expect(stored.sizeBytes).toBe(5);
    const read = await store.get(stored.path, stored.checksum);
    expect([...read.keys()]).toEqual(["a.json", "b.bin"]);
    await expect(store.put("t/a/sampler/1", files)).rejects.toThrow(/immutable/);
    await writeFile(path.join(stored.path, "b.bin"), "x");
    await expect(store.get(stored.path, stored.checksum)).rejects.toBeInstanceOf(ChecksumMismatchError);
    await store.delete(stored.path);
    await expect(store.get(stored.path)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it("refuses keys and paths that would leave it", async () => {
    const store = new LocalStore(path.join(dir, "s2"));
    await expect(store.put("../x", files)).rejects.toBeInstanceOf(RangeError);
    await expect(store.put("t/a", new Map([[".hidden", new Uint8Array(1)]]))).rejects.toBeInstanceOf(
      RangeError,
    );
    await expect(store.get(path.join(dir, "s1", "t"))).rejects.toBeInstanceOf(RangeError);
    await expect(store.delete(path.join(dir, "s2", "..", "s1"))).rejects.toBeInstanceOf(RangeError);
  });
});
