// Where immutable snapshots and training-state checkpoints live. A local
// directory now; an S3-compatible store implements the same interface later.
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";

export interface StoredObject {
  /** Opaque location, understood by the store that wrote it. */
  path: string;
  /** sha256 over the object's files, in name order (name, length, bytes). */
  checksum: string;
  sizeBytes: number;
}

export interface SnapshotStore {
  /** Writes a new object from named files; fails if `key` exists (objects are immutable). */
  put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject>;
  /** Reads an object back and verifies its checksum. */
  get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>>;
  delete(objectPath: string): Promise<void>;
}

export class ChecksumMismatchError extends Error {
  override name = "ChecksumMismatchError";
}

/** Checksum of a set of files, independent of where they are stored. */
export function checksumFiles(files: ReadonlyMap<string, Uint8Array>): string {
  const hash = createHash("sha256");
  for (const name of [...files.keys()].sort()) {
    const bytes = files.get(name) as Uint8Array;
    hash.update(`${name}\0${bytes.byteLength}\0`);
    hash.update(bytes);
  }
  return `sha256:${hash.digest("hex")}`;
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
const FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

async function writeDurably(file: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(file, "wx");
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Objects as directories under `root`. A put writes into a hidden temporary
 * directory and renames it into place, so a reader never sees a partial object.
 */
export class LocalSnapshotStore implements SnapshotStore {
  constructor(readonly root: string) {}

  async put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject> {
    if (!KEY.test(key) || key.split("/").includes(".."))
      throw new RangeError(`snapshot store: invalid key "${key}"`);
    for (const name of files.keys()) {
      if (!FILE.test(name)) throw new RangeError(`snapshot store: invalid file name "${name}"`);
    }
    const target = path.join(this.root, key);
    if (existsSync(target)) throw new Error(`snapshot store: ${key} already exists and is immutable`);
    await mkdir(path.dirname(target), { recursive: true });
    const staging = path.join(
      path.dirname(target),
      `.staging-${path.basename(target)}-${randomBytes(6).toString("hex")}`,
    );
    await mkdir(staging);
    try {
      let sizeBytes = 0;
      for (const [name, bytes] of files) {
        await writeDurably(path.join(staging, name), bytes);
        sizeBytes += bytes.byteLength;
      }
      await rename(staging, target);
      return { path: target, checksum: checksumFiles(files), sizeBytes };
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  async get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>> {
    const resolved = path.resolve(objectPath);
    if (!resolved.startsWith(path.resolve(this.root) + path.sep)) {
      throw new RangeError(`snapshot store: ${objectPath} is outside the store`);
    }
    if (!(await stat(resolved).catch(() => null))?.isDirectory())
      throw new Error(`snapshot store: ${objectPath} not found`);
    const files = new Map<string, Uint8Array>();
    for (const name of (await readdir(resolved)).sort())
      files.set(name, new Uint8Array(await readFile(path.join(resolved, name))));
    if (expectedChecksum && checksumFiles(files) !== expectedChecksum) {
      throw new ChecksumMismatchError(
        `snapshot store: ${objectPath} does not match its checksum ${expectedChecksum}`,
      );
    }
    return files;
  }

  async delete(objectPath: string): Promise<void> {
    await rm(path.resolve(objectPath), { recursive: true, force: true });
  }
}
