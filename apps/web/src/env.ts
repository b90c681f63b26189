import path from "node:path";
import { parseHostList } from "@opentinker/protocol";
import { z } from "zod";
import { parseTinkerModelAliases } from "./server/tinker/model-names.ts";

// The web process's whole configuration, read once from the environment.
export const ZWebEnv = z.object({
  DATABASE_URL: z.string().min(1, "DATABASE_URL is required (npm start sets it)"),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Where the local object store is (<dir>/store) when OPENTINKER_STORE names no bucket. */
  OPENTINKER_DATA_DIR: z.string().min(1).default(path.resolve(".data")),
  /** Seals dashboard session cookies; npm start generates one and keeps it in the data directory. */
  OPENTINKER_SESSION_SECRET: z.string().min(32, "OPENTINKER_SESSION_SECRET must be at least 32 characters"),
  /** "1": session cookies are Secure (serve over HTTPS). */
  OPENTINKER_SECURE_COOKIES: z
    .enum(["0", "1"])
    .default("0")
    .transform((v) => v === "1"),
  /** Hosts (host or host:port, comma-separated) that remote environments may be on; none by default. */
  OPENTINKER_REMOTE_ENV_HOSTS: z.string().default("").transform(parseHostList),
  /** Tinker base-model names as ours, a JSON object ({"Qwen/Qwen3-8B": "opentinker-text-tiny"}); none by default. */
  OPENTINKER_TINKER_MODELS: z.string().default("").transform(parseTinkerModelAliases),
  /** On SIGTERM, how long requests in flight (long polls included) may take to finish. */
  OPENTINKER_DRAIN_MS: z.coerce.number().int().min(0).default(20_000),
});

export type WebEnv = z.infer<typeof ZWebEnv>;

export function readWebEnv(source: NodeJS.ProcessEnv = process.env): WebEnv {
  const parsed = ZWebEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`web configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}
