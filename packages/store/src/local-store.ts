// The default store: objects as folders under a local directory (`.data/store`
// for `npm start`). A put writes into a hidden staging folder and renames it
// into place, so a reader never sees a partial object.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import {
  checkObject,
  checksumFiles,
  ObjectNotFoundError,
  type ObjectStore,
  type StoredObject,
  sizeOf,
  verifyChecksum,
} from "./object-store.ts";

async function writeDurably(file: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(file, "wx");
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `files` as the folder `target`, all or nothing (staging folder, then one rename). */
export async function writeFolder(target: string, files: ReadonlyMap<string, Uint8Array>): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  const staging = path.join(
    path.dirname(target),
    `.staging-${path.basename(target)}-${randomBytes(6).toString("hex")}`,
  );
  await mkdir(staging);
  try {
    for (const [name, bytes] of files) await writeDurably(path.join(staging, name), bytes);
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Every file of a folder, by name; null when there is no such folder. */
export async function readFolder(folder: string): Promise<Map<string, Uint8Array> | null> {
  if (!(await stat(folder).catch(() => null))?.isDirectory()) return null;
  const files = new Map<string, Uint8Array>();
  for (const name of (await readdir(folder)).sort())
    files.set(name, new Uint8Array(await readFile(path.join(folder, name))));
  return files;
}

export class LocalStore implements ObjectStore {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  get location(): string {
    return this.root;
  }

  async put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject> {
    checkObject(key, files);
    const target = path.join(this.root, key);
    if (existsSync(target)) throw new Error(`object store: ${key} already exists and is immutable`);
    await writeFolder(target, files);
    return { path: target, checksum: checksumFiles(files), sizeBytes: sizeOf(files) };
  }

  async get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>> {
    const files = await readFolder(this.inside(objectPath));
    if (!files) throw new ObjectNotFoundError(`object store: ${objectPath} not found`);
    verifyChecksum(objectPath, files, expectedChecksum);
    return files;
  }

  async delete(objectPath: string): Promise<void> {
    await rm(this.inside(objectPath), { recursive: true, force: true });
  }

  /** The object's folder; a path outside the store is refused, never read or deleted. */
  private inside(objectPath: string): string {
    const resolved = path.resolve(objectPath);
    if (!resolved.startsWith(this.root + path.sep))
      throw new RangeError(`object store: ${objectPath} is outside the store ${this.root}`);
    return resolved;
  }
}
