// The files of stored objects (snapshots and checkpoints) as the web process
// reads and deletes them, through the object store: downloads, archives, and
// deletions its callers ask for.
import type { ObjectStore } from "@opentinker/store";
import { TRPCError } from "@trpc/server";

function needStore(store: ObjectStore | null): ObjectStore {
  if (!store) throw new Error("this server was given no object store");
  return store;
}

/** An object's files by name, checksum verified. */
export async function readObjectFiles(
  store: ObjectStore | null,
  object: { path: string; checksum: string },
): Promise<Map<string, Uint8Array>> {
  try {
    return await needStore(store).get(object.path, object.checksum);
  } catch (cause) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "the stored files are not readable",
      cause,
    });
  }
}

/** A snapshot's PEFT files (adapter_config.json, adapter_model.safetensors), base64-encoded, checksum verified. */
export async function readSnapshotFiles(
  store: ObjectStore | null,
  snapshot: { path: string; checksum: string },
): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const [name, bytes] of await readObjectFiles(store, snapshot))
    files[name] = Buffer.from(bytes).toString("base64");
  return files;
}

/** Deletes an object whose row is gone (a failure leaves an unlisted orphan, never a listed hole). */
export async function deleteObjectFiles(store: ObjectStore | null, objectPath: string): Promise<void> {
  await needStore(store)
    .delete(objectPath)
    .catch((error: unknown) => {
      console.error(`web: could not delete ${objectPath}: ${error instanceof Error ? error.message : error}`);
    });
}
