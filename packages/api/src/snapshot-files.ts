import type { ObjectStore } from "@opentinker/store";
import { TRPCError } from "@trpc/server";

/** A snapshot's PEFT files (adapter_config.json, adapter_model.safetensors), base64-encoded, checksum verified. */
export async function readSnapshotFiles(
  store: ObjectStore | null,
  snapshot: { path: string; checksum: string },
): Promise<Record<string, string>> {
  try {
    if (!store) throw new Error("this server was given no object store");
    const files: Record<string, string> = {};
    for (const [name, bytes] of await store.get(snapshot.path, snapshot.checksum))
      files[name] = Buffer.from(bytes).toString("base64");
    return files;
  } catch (cause) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "the snapshot's files are not readable",
      cause,
    });
  }
}
