import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The data directory: the embedded database, the local store, the starter model, the store's cache. */
const ZDataDir = z.string().min(1).default(path.join(REPO_ROOT, ".data"));

export function readDataDir(source: NodeJS.ProcessEnv = process.env): string {
  return z.object({ OPENTINKER_DATA_DIR: ZDataDir }).parse(source).OPENTINKER_DATA_DIR;
}

// `npm start`'s whole configuration, read once from the environment.
export const ZStartEnv = z.object({
  DATABASE_URL: z
    .string()
    .optional()
    .transform((value) => value || undefined),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  OPENTINKER_DATA_DIR: ZDataDir,
  /** Seals dashboard cookies; generated once into the data directory when unset. */
  OPENTINKER_SESSION_SECRET: z.string().min(32).optional(),
  /** More base models: "name=/path/to/hf-dir,other=/path". */
  OPENTINKER_MODELS: z.string().optional(),
  /** "1": serve the dashboard build that is there instead of building it. */
  OPENTINKER_SKIP_BUILD: z
    .string()
    .optional()
    .transform((value) => value === "1"),
});

export type StartEnv = z.infer<typeof ZStartEnv>;

export function readStartEnv(source: NodeJS.ProcessEnv = process.env): StartEnv {
  const parsed = ZStartEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}

// The configuration of `npm run worker` and `npm run setup`, which run beside
// a database of their own (never the embedded one): the database, the data
// directory (the starter model, written the same on every host, and the
// store's cache) and more base models to register (setup).
export const ZClusterEnv = z.object({
  DATABASE_URL: z
    .string({ error: "DATABASE_URL is required: the database every web process and worker shares" })
    .min(1, "DATABASE_URL is required: the database every web process and worker shares"),
  OPENTINKER_DATA_DIR: ZDataDir,
  OPENTINKER_MODELS: z.string().optional(),
  /** On SIGTERM, how long `npm run worker` waits for its worker to drain before killing it. */
  WORKER_DRAIN_MS: z.coerce.number().int().min(0).default(30_000),
});

export type ClusterEnv = z.infer<typeof ZClusterEnv>;

export function readClusterEnv(source: NodeJS.ProcessEnv = process.env): ClusterEnv {
  const parsed = ZClusterEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}
