// The domain errors our query helpers throw; the API maps each to one status.

/** The team has no such object (another team's answers the same). */
export class NotFoundError extends Error {
  override name = "NotFoundError";
}

/** A team's quota refused the call. */
export class QuotaExceededError extends Error {
  override name = "QuotaExceededError";
}

/** The caller's team no longer exists (deleted while its key was in use). */
export class UnknownTeamError extends Error {
  override name = "UnknownTeamError";
}

/** SQLSTATEs our triggers raise (prisma/migrations). */
const QUOTA_SQLSTATE = "OT429";
const UNKNOWN_TEAM_SQLSTATE = "OT401";
/** The quota trigger asks for its statement to run again (it took the other lock path). */
export const RETRY_SQLSTATE = "OT409";

interface PostgresCause {
  code?: string;
  message?: string;
}

/** The Postgres error under a Prisma error, when there is one. */
export function postgresCause(error: unknown): PostgresCause | null {
  const meta = (error as { meta?: { driverAdapterError?: { cause?: PostgresCause } } } | null)?.meta;
  return meta?.driverAdapterError?.cause ?? null;
}

/** Rethrows what a trigger refused as the domain error it stands for; anything else as it is. */
export function rethrowDomainError(error: unknown): never {
  const cause = postgresCause(error);
  if (cause?.code === QUOTA_SQLSTATE) throw new QuotaExceededError(cause.message ?? "quota exceeded");
  if (cause?.code === UNKNOWN_TEAM_SQLSTATE) throw new UnknownTeamError(cause.message ?? "unknown team");
  throw error;
}
