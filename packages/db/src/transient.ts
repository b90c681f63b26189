// Which database errors are transient (issue 44): the connection was lost, the
// pool or a transaction timed out, a lock wait or a serialization conflict gave
// up. Running the same work again may succeed; the error says nothing about the
// work itself. Everything else (a constraint, a trigger's refusal, a bug) is not.
import { errorChain, isNetworkFault } from "@opentinker/protocol";

/**
 * Prisma's codes: can't reach / timed out / server closed the connection
 * (P1001, P1002, P1008, P1017), no pool connection in time (P2024), transaction
 * could not start or expired (P2028), write conflict or deadlock (P2034).
 */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2028", "P2034"]);

/**
 * SQLSTATEs: serialization failure and deadlock (40001, 40P01), lock not
 * available (55P03), statement cancelled or timed out (57014), the server shut
 * the connection (57P01–57P03), and the classes connection exception (08) and
 * insufficient resources (53: too many connections, out of memory).
 */
const SQLSTATES = new Set(["40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03"]);
const SQLSTATE_CLASSES = ["08", "53"];

/** The driver adapter's kinds for a lost or refused connection (not a Postgres error). */
const ADAPTER_KINDS = new Set([
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
  "DatabaseNotReachable",
  "TransactionWriteConflict",
  "TransactionAlreadyClosed",
]);

/** node-postgres says so in words only, for a connection that broke under it. */
const PG_CLIENT_MESSAGE =
  /Connection terminated|connection error and is not queryable|Client was closed|timeout exceeded when trying to connect/i;

const transientSqlstate = (code: string) =>
  SQLSTATES.has(code) || SQLSTATE_CLASSES.some((prefix) => code.startsWith(prefix));

interface MaybeDbError {
  code?: unknown;
  message?: unknown;
  meta?: { driverAdapterError?: { cause?: { code?: unknown; kind?: unknown } } };
}

function transientOne(e: MaybeDbError): boolean {
  const code = typeof e.code === "string" ? e.code : "";
  if (PRISMA_CODES.has(code)) return true;
  // A raw pg error carries its SQLSTATE as `code` (five characters).
  if (code.length === 5 && transientSqlstate(code)) return true;
  const adapter = e.meta?.driverAdapterError?.cause;
  if (typeof adapter?.code === "string" && transientSqlstate(adapter.code)) return true;
  if (typeof adapter?.kind === "string" && ADAPTER_KINDS.has(adapter.kind)) return true;
  return typeof e.message === "string" && PG_CLIENT_MESSAGE.test(e.message);
}

/** True when the database failed the work for a reason a later try may not meet. */
export function isTransientDbError(error: unknown): boolean {
  if (isNetworkFault(error)) return true;
  return errorChain(error).some((e) => typeof e === "object" && transientOne(e as MaybeDbError));
}
