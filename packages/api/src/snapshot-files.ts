import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { TRPCError } from "@trpc/server";

/** A snapshot's PEFT files (adapter_config.json, adapter_model.safetensors), base64-encoded. */
export async function readSnapshotFiles(dir: string): Promise<Record<string, string>> {
  try {
    const files: Record<string, string> = {};
    for (const name of (await readdir(dir)).sort())
      files[name] = (await readFile(path.join(dir, name))).toString("base64");
    return files;
  } catch (cause) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "the snapshot's files are not readable",
      cause,
    });
  }
}
