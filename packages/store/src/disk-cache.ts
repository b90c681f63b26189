// A worker's local copy of what it read from a remote store: each object once
// on disk (a folder named by the hash of its path, written all or nothing),
// kept within a byte budget by evicting the least recently used. Objects are
// immutable, so an entry never goes stale; every hit is checked against the
// object's checksum, and an entry that fails (a damaged disk, another process
// evicting it) is read from the store again.
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rm, stat, utimes } from "node:fs/promises";
import path from "node:path";
import { readFolder, writeFolder } from "./local-store.ts";
import {
  checksumFiles,
  type ObjectStore,
  type StoredObject,
  sizeOf,
  verifyChecksum,
} from "./object-store.ts";

/** Beside an entry's files: which object it is and its checksum (a file name objects cannot use). */
const ABOUT = ".object.json";

export interface CacheStats {
  hits: number;
  misses: number;
  /** Bytes of the objects' files held now (never above the budget). */
  bytes: number;
  entries: number;
}

export class CachedStore implements ObjectStore {
  /** Entry folder → its bytes, least recently used first. */
  private index: Map<string, number> | null = null;
  private indexLoading: Promise<Map<string, number>> | null = null;
  private bytes = 0;
  private hits = 0;
  private misses = 0;
  private readonly loading = new Map<string, Promise<Map<string, Uint8Array>>>();

  constructor(
    readonly inner: ObjectStore,
    readonly dir: string,
    readonly budgetBytes: number,
  ) {}

  get location(): string {
    return this.inner.location;
  }

  stats(): CacheStats {
    return { hits: this.hits, misses: this.misses, bytes: this.bytes, entries: this.index?.size ?? 0 };
  }

  async put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject> {
    const stored = await this.inner.put(key, files);
    // What this worker publishes, its own sampler usually loads next.
    await this.remember(stored.path, files, stored.checksum);
    return stored;
  }

  async get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>> {
    const cached = await this.lookup(objectPath, expectedChecksum);
    if (cached) {
      this.hits++;
      return cached;
    }
    let pending = this.loading.get(objectPath);
    if (!pending) {
      this.misses++;
      pending = this.inner.get(objectPath, expectedChecksum).then(async (files) => {
        await this.remember(objectPath, files, checksumFiles(files));
        return files;
      });
      pending.finally(() => this.loading.delete(objectPath)).catch(() => {});
      this.loading.set(objectPath, pending);
    }
    return pending;
  }

  async delete(objectPath: string): Promise<void> {
    await this.inner.delete(objectPath);
    await this.forget(entryName(objectPath));
  }

  private async lookup(
    objectPath: string,
    expectedChecksum?: string,
  ): Promise<Map<string, Uint8Array> | null> {
    const index = await this.loadIndex();
    const name = entryName(objectPath);
    if (!index.has(name)) return null;
    const folder = path.join(this.dir, name);
    try {
      const about = JSON.parse(await readFile(path.join(folder, ABOUT), "utf8")) as { checksum?: string };
      const files = await readFolder(folder);
      if (!files) throw new Error("entry gone");
      files.delete(ABOUT);
      verifyChecksum(objectPath, files, about.checksum);
      verifyChecksum(objectPath, files, expectedChecksum);
      // Most recently used now (the folder's time keeps the order for the next process).
      index.delete(name);
      index.set(name, sizeOf(files));
      const now = new Date();
      await utimes(folder, now, now).catch(() => {});
      return files;
    } catch {
      await this.forget(name);
      return null;
    }
  }

  private async remember(objectPath: string, files: ReadonlyMap<string, Uint8Array>, checksum: string) {
    const bytes = sizeOf(files);
    if (bytes > this.budgetBytes) return;
    try {
      const index = await this.loadIndex();
      const name = entryName(objectPath);
      if (index.has(name)) return;
      for (const [oldest] of index) {
        if (this.bytes + bytes <= this.budgetBytes) break;
        await this.forget(oldest);
      }
      const entry = new Map(files);
      entry.set(ABOUT, new TextEncoder().encode(JSON.stringify({ path: objectPath, checksum })));
      await writeFolder(path.join(this.dir, name), entry);
      index.set(name, bytes);
      this.bytes += bytes;
    } catch {
      // The cache only saves downloads: a full disk or a racing process costs one later.
    }
  }

  private async forget(name: string): Promise<void> {
    const index = await this.loadIndex();
    const bytes = index.get(name);
    if (bytes !== undefined) {
      index.delete(name);
      this.bytes -= bytes;
    }
    await rm(path.join(this.dir, name), { recursive: true, force: true });
  }

  private loadIndex(): Promise<Map<string, number>> {
    this.indexLoading ??= this.scan();
    return this.indexLoading;
  }

  /** What a previous process left, oldest use first; its half-written staging folders are removed. */
  private async scan(): Promise<Map<string, number>> {
    await mkdir(this.dir, { recursive: true });
    const found: { name: string; bytes: number; used: number }[] = [];
    for (const name of await readdir(this.dir)) {
      const folder = path.join(this.dir, name);
      if (name.startsWith(".staging-")) {
        await rm(folder, { recursive: true, force: true });
        continue;
      }
      const info = await stat(folder).catch(() => null);
      if (!info?.isDirectory()) continue;
      let bytes = 0;
      for (const file of await readdir(folder))
        if (file !== ABOUT) bytes += (await stat(path.join(folder, file))).size;
      found.push({ name, bytes, used: info.mtimeMs });
    }
    found.sort((a, b) => a.used - b.used);
    this.index = new Map(found.map((e) => [e.name, e.bytes]));
    this.bytes = found.reduce((sum, e) => sum + e.bytes, 0);
    return this.index;
  }
}

function entryName(objectPath: string): string {
  return createHash("sha256").update(objectPath).digest("hex").slice(0, 40);
}

/** The folder under a cache directory that holds an object's copy. */
export function cacheEntryFolder(dir: string, objectPath: string): string {
  return path.join(dir, entryName(objectPath));
}
