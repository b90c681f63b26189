// packages/db's settings from the environment, zod-validated: where the database
// is (the CLIs), and how long a silent worker stays placed (every process that
// places adapters or reaps workers reads the same WORKER_STALE_AFTER_MS).
import { z } from "zod";

/** How long a worker may go without a heartbeat before it counts as lost. */
export const DEFAULT_STALE_AFTER_MS = 15_000;

const emptyAsUnset = z
  .string()
  .optional()
  .transform((value) => value || undefined);

export const ZDbEnv = z.object({
  /** Unset: the embedded Postgres under the data directory. */
  DATABASE_URL: emptyAsUnset,
  OPENTINKER_DATA_DIR: emptyAsUnset,
  /** Anything but a positive number means the default. */
  WORKER_STALE_AFTER_MS: z.coerce.number().positive().catch(DEFAULT_STALE_AFTER_MS),
});

export type DbEnv = z.infer<typeof ZDbEnv>;

export function readDbEnv(source: Record<string, string | undefined> = process.env): DbEnv {
  return ZDbEnv.parse(source);
}

let stale: { raw: string | undefined; ms: number } | undefined;

/**
 * WORKER_STALE_AFTER_MS as it is now (read on every placement, as a test may
 * set it before starting its servers), parsed only when it changed.
 */
export function staleAfterMs(): number {
  const raw = process.env.WORKER_STALE_AFTER_MS;
  if (stale && stale.raw === raw) return stale.ms;
  const ms = readDbEnv({ WORKER_STALE_AFTER_MS: raw }).WORKER_STALE_AFTER_MS;
  stale = { raw, ms };
  return ms;
}

/** The environment a child process (Postgres, or npm start's web and worker) runs with: this one's, plus `overrides`. */
export function inheritedEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
