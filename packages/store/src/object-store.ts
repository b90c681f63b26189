// What every object store is: immutable objects (a snapshot's PEFT files, a
// checkpoint's training state), each a set of named files under a key, written
// once, read back with their checksum verified, deleted when their rows go.
import { createHash } from "node:crypto";

export interface StoredObject {
  /** Opaque location, understood by the store that wrote it (a folder, or s3://bucket/key). */
  path: string;
  /** sha256 over the object's files, in name order (name, length, bytes). */
  checksum: string;
  sizeBytes: number;
}

export interface ObjectStore {
  /** Where new objects go, for messages: a folder, or s3://bucket/prefix. */
  readonly location: string;
  /**
   * Writes a new object from named files; fails if `key` exists (objects are
   * immutable). Resolves only once every file is stored: until then no reader
   * finds the object, so a row recorded after this never names a partial one.
   */
  put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject>;
  /** Reads an object back and verifies its checksum. */
  get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>>;
  /** Deletes an object and every file of it; deleting a missing object is no error. */
  delete(objectPath: string): Promise<void>;
}

export class ChecksumMismatchError extends Error {
  override name = "ChecksumMismatchError";
}

export class ObjectNotFoundError extends Error {
  override name = "ObjectNotFoundError";
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

export function sizeOf(files: ReadonlyMap<string, Uint8Array>): number {
  let bytes = 0;
  for (const file of files.values()) bytes += file.byteLength;
  return bytes;
}

/** The checksum check every store runs on what it read. */
export function verifyChecksum(
  objectPath: string,
  files: ReadonlyMap<string, Uint8Array>,
  expectedChecksum: string | undefined,
): void {
  if (expectedChecksum && checksumFiles(files) !== expectedChecksum)
    throw new ChecksumMismatchError(
      `object store: ${objectPath} does not match its checksum ${expectedChecksum}`,
    );
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
const FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Keys are slash-separated names and file names one name, so neither can leave the store. */
export function checkObject(key: string, files: ReadonlyMap<string, Uint8Array>): void {
  if (!KEY.test(key) || key.split("/").includes(".."))
    throw new RangeError(`object store: invalid key "${key}"`);
  if (files.size === 0) throw new RangeError(`object store: ${key} has no files`);
  for (const name of files.keys())
    if (!FILE.test(name)) throw new RangeError(`object store: invalid file name "${name}"`);
}
