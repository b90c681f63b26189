// Faults and their classes (issue 44): a fault is transient when trying the same
// thing again may succeed (a lost connection, a lock wait, a store's 503), a
// user's when the job's own config or data caused it, internal when it is a bug
// of ours. Only user and internal faults end a job FAILED; the class is shown
// with the job's error. The network codes below are the one list every client
// (Postgres, the object store, remote environments) treats as transient.
import { z } from "zod";

/** Why a job FAILED, as the API shows it. */
export const ZJobErrorClass = z.enum(["USER", "INTERNAL"]);
export type JobErrorClass = z.infer<typeof ZJobErrorClass>;

/** What a worker does with a fault: retry or requeue (TRANSIENT), or end the job with the class. */
export type FaultClass = "TRANSIENT" | JobErrorClass;

/** Node's and undici's codes for a connection that failed, not a request that was refused. */
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CLOSED",
]);

/** An error and its causes, outermost first (a few levels: wrappers nest causes). */
export function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e != null && chain.length < 6; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/** True when the error, or one of its causes, is a failed connection. */
export function isNetworkFault(error: unknown): boolean {
  return errorChain(error).some((e) => {
    const code = (e as { code?: unknown }).code;
    return typeof code === "string" && NETWORK_CODES.has(code);
  });
}
