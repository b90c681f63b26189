import type { DbTx } from "./client.ts";

/**
 * Serialises one kind of change of one team until the transaction ends (a
 * transaction-scoped advisory lock), so a quota counted inside it holds exactly.
 */
export async function lockTeam(
  tx: DbTx,
  scope: "adapters" | "jobs" | "tinker-sessions",
  teamId: string,
): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`${scope}:${teamId}`}))`;
}
