// File helpers shared by model I/O: reading JSON, turning zod issues into one-line
// messages that name the file and the key, and atomic writes with a checksum.
import { createHash, randomUUID } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

// One read or write call moves at most this much (Node caps a single call near 2 GiB).
export const IO_CHUNK_BYTES = 1 << 30;

export interface WrittenFile {
  path: string;
  /** sha256 of the file bytes, hex; computed while writing, so it costs no second read. */
  sha256: string;
  byteLength: number;
}

export {
  describeValue,
  formatKeyPath,
  isNotFound,
  parseWithSchema,
  readJsonFile,
} from "@opentinker/tokenizer";

type ByteSink = (bytes: Uint8Array) => Promise<void>;

/**
 * Writes through a temporary file in the same directory, fsyncs it, renames it over
 * `path` and fsyncs the directory: a crash leaves the old file or the new one, never
 * half of one. Returns the sha256 and length of what was written.
 */
export async function writeFileAtomically(
  path: string,
  produce: (write: ByteSink) => Promise<void>,
): Promise<WrittenFile> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomUUID()}.tmp`);
  const hash = createHash("sha256");
  let byteLength = 0;
  const file = await open(temp, "wx");
  try {
    await produce(async (bytes) => {
      for (let done = 0; done < bytes.byteLength; ) {
        const length = Math.min(IO_CHUNK_BYTES, bytes.byteLength - done);
        const { bytesWritten } = await file.write(bytes, done, length);
        if (bytesWritten === 0) throw new Error(`${temp}: write made no progress`);
        done += bytesWritten;
      }
      hash.update(bytes);
      byteLength += bytes.byteLength;
    });
    await file.sync();
    await file.close();
    await rename(temp, path);
  } catch (error) {
    await file.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(path));
  return { path, sha256: hash.digest("hex"), byteLength };
}

// The rename is durable only once the directory entry is on disk. Windows cannot
// open a directory for fsync; there the rename alone is the best available.
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes pretty-printed JSON (with a final newline, as transformers does) atomically. */
export function writeJsonFile(path: string, value: unknown): Promise<WrittenFile> {
  const bytes = new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);
  return writeFileAtomically(path, (write) => write(bytes));
}
