export * from "./adapter-history.ts";
export * from "./adapter-size.ts";
export * from "./adapters.ts";
export * from "./api-keys.ts";
export * from "./audit-events.ts";
export * from "./base-models.ts";
export * from "./checkpoints.ts";
export { createDb, type Db, type DbTx, getDb } from "./client.ts";
export * from "./database-server.ts";
export * from "./database-url.ts";
export {
  inheritedEnv,
  type PoolSettings,
  poolSettings,
  staleAfterMs,
  tinkerCallExpiryMs,
  ZDbEnv,
} from "./env.ts";
export * from "./environments.ts";
export * from "./errors.ts";
export { findFreePort, isPortFree } from "./free-port.ts";
export { Prisma } from "./generated/prisma/client.ts";
export type * from "./generated/prisma/enums.ts";
export * from "./job-list.ts";
export * from "./job-records.ts";
export * from "./job-runs.ts";
export * from "./job-steps.ts";
export * from "./jobs.ts";
export * from "./leader-lease.ts";
export * from "./metrics.ts";
export * from "./migrate.ts";
export * from "./passwords.ts";
export * from "./pg-listener.ts";
export * from "./placement.ts";
export * from "./queue-logger.ts";
export * from "./queue-names.ts";
export * from "./queue-tasks.ts";
export * from "./request-waiter.ts";
export * from "./requests.ts";
export * from "./seed.ts";
export * from "./sessions.ts";
export * from "./snapshot-tags.ts";
export * from "./snapshots.ts";
export * from "./team-pool.ts";
export * from "./teams.ts";
export * from "./tinker-calls.ts";
export * from "./tinker-checkpoints.ts";
export * from "./tinker-runs.ts";
export * from "./tinker-sessions.ts";
export * from "./trajectories.ts";
export * from "./trajectory-codec.ts";
export * from "./transient.ts";
export * from "./usage.ts";
export * from "./workers.ts";
