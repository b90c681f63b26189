// The files of stored objects (snapshots and checkpoints), as the web process
// reads and deletes them: downloads, archives, deletions its callers ask for.
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { TRPCError } from "@trpc/server";

/** An object's files by name, in name order. */
export async function readObjectFiles(dir: string): Promise<Map<string, Buffer>> {
  try {
    const files = new Map<string, Buffer>();
    for (const name of (await readdir(dir)).sort()) files.set(name, await readFile(path.join(dir, name)));
    return files;
  } catch (cause) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "the stored files are not readable",
      cause,
    });
  }
}

/** A snapshot's PEFT files (adapter_config.json, adapter_model.safetensors), base64-encoded. */
export async function readSnapshotFiles(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const [name, bytes] of await readObjectFiles(dir)) files[name] = bytes.toString("base64");
  return files;
}

/** Deletes an object whose row is gone (a failure leaves an unlisted orphan, never a listed hole). */
export async function deleteObjectFiles(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch((error: unknown) => {
    console.error(`web: could not delete ${dir}: ${error instanceof Error ? error.message : error}`);
  });
}
