// packages/db's settings from the environment, zod-validated: where the database
// is (the CLIs), the connection pool every process opens (its size, a team's
// share of it, statement and transaction limits), how long a silent worker stays
// placed (every process that places adapters or reaps workers reads the same
// WORKER_STALE_AFTER_MS), and how long a Tinker call waits for a missing seq_id.
import { z } from "zod";

/** How long a worker may go without a heartbeat before it counts as lost. */
export const DEFAULT_STALE_AFTER_MS = 15_000;
/** How long a Tinker call may wait for a call with a lower seq_id that has not come. */
export const DEFAULT_TINKER_CALL_EXPIRY_MS = 120_000;

const emptyAsUnset = z
  .string()
  .optional()
  .transform((value) => value || undefined);

/** A positive whole number, or undefined when unset; anything else is refused. */
const optionalPositiveInt = emptyAsUnset.pipe(
  z.coerce.number<string | undefined>().int().positive().optional(),
);

/** A positive whole number, or `fallback` when unset; anything else is refused. */
const positiveInt = (fallback: number) => optionalPositiveInt.transform((value) => value ?? fallback);

export const ZDbEnv = z.object({
  /** Unset: the embedded Postgres under the data directory. */
  DATABASE_URL: emptyAsUnset,
  OPENTINKER_DATA_DIR: emptyAsUnset,
  /** Connections each process's pool may open. */
  DATABASE_POOL_SIZE: positiveInt(10),
  /** Connections one team's calls may hold at once in a web process; unset: half the pool (team-pool.ts). */
  DATABASE_TEAM_POOL_SHARE: optionalPositiveInt,
  /** A statement running longer is cancelled (lock waits included). */
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt(60_000),
  /** How long an interactive transaction may wait for its connection (Prisma's maxWait; its own default, 2 s, is too short for a busy two-core box). */
  DATABASE_TRANSACTION_MAX_WAIT_MS: positiveInt(10_000),
  /** How long an interactive transaction may run (Prisma's timeout). */
  DATABASE_TRANSACTION_TIMEOUT_MS: positiveInt(30_000),
  /** Anything but a positive number means the default. */
  WORKER_STALE_AFTER_MS: z.coerce.number().positive().catch(DEFAULT_STALE_AFTER_MS),
  /** A Tinker call held above a missing seq_id fails after this long (tinker-calls.ts). */
  TINKER_CALL_EXPIRY_MS: positiveInt(DEFAULT_TINKER_CALL_EXPIRY_MS),
});

export type DbEnv = z.infer<typeof ZDbEnv>;

export function readDbEnv(source: Record<string, string | undefined> = process.env): DbEnv {
  return ZDbEnv.parse(source);
}

/** The pool a process opens (client.ts). */
export interface PoolSettings {
  poolSize: number;
  /** Connections one team may hold at once (never more than the pool). */
  teamShare: number;
  statementTimeoutMs: number;
  transactionMaxWaitMs: number;
  transactionTimeoutMs: number;
}

/** The pool settings of `source` (this process's environment by default); a bad value is refused, naming it. */
export function poolSettings(source: Record<string, string | undefined> = process.env): PoolSettings {
  const parsed = ZDbEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`database configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  const env = parsed.data;
  const poolSize = env.DATABASE_POOL_SIZE;
  return {
    poolSize,
    teamShare: Math.min(poolSize, env.DATABASE_TEAM_POOL_SHARE ?? Math.max(1, Math.floor(poolSize / 2))),
    statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
    transactionMaxWaitMs: env.DATABASE_TRANSACTION_MAX_WAIT_MS,
    transactionTimeoutMs: env.DATABASE_TRANSACTION_TIMEOUT_MS,
  };
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

let expiry: { raw: string | undefined; ms: number } | undefined;

/** TINKER_CALL_EXPIRY_MS as it is now (a test may set it before its calls), parsed only when it changed. */
export function tinkerCallExpiryMs(): number {
  const raw = process.env.TINKER_CALL_EXPIRY_MS;
  if (expiry && expiry.raw === raw) return expiry.ms;
  const parsed = ZDbEnv.shape.TINKER_CALL_EXPIRY_MS.safeParse(raw);
  const ms = parsed.success ? parsed.data : DEFAULT_TINKER_CALL_EXPIRY_MS;
  expiry = { raw, ms };
  return ms;
}

/** The environment a child process (Postgres, or npm start's web and worker) runs with: this one's, plus `overrides`. */
export function inheritedEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
