// Rows as they go out over the API: dates as ISO strings, big integers as
// numbers, a request's row as the state of its future.
import type { RequestOutcome } from "@opentinker/db";
import type { FutureState } from "@opentinker/protocol";

export const iso = (date: Date): string => date.toISOString();
export const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** A call's future as a client sees it. */
export function futureState(row: RequestOutcome): FutureState {
  return {
    requestId: row.id,
    kind: row.kind,
    status: row.status,
    output: row.output ?? null,
    error: row.error,
  };
}
