// Training calls over the Tinker protocol, in the client's seq_id order. The
// SDK numbers every training call of a model 1, 2, … and sends a batch's chunks
// concurrently (the first one last), so a call may arrive before the one it
// follows. Each call is recorded here; under a per-model lock the calls that are
// next in line become Requests (which our own ordering then keeps), and a call
// that arrived early waits as a row until its predecessors come.
import { randomUUID } from "node:crypto";
import type { Db, DbTx } from "./client.ts";
import { NotFoundError } from "./errors.ts";
import { Prisma, type RequestKind } from "./generated/prisma/client.ts";

export interface TinkerCallState {
  id: string;
  adapterId: string;
  seqId: number;
  kind: RequestKind;
  /** The Request it became, once queued. */
  requestId: string | null;
  /** Why it was refused instead (an HTTP status and message). */
  errorStatus: number | null;
  error: string | null;
}

const callSelect = {
  id: true,
  adapterId: true,
  seqId: true,
  kind: true,
  requestId: true,
  errorStatus: true,
  error: true,
} as const;

/**
 * Records a call of this team's adapter; a call sent again (the SDK retries a
 * lost response) is the one recorded first. Another team's adapter answers as
 * a missing one.
 */
export async function recordTinkerCall(
  db: DbTx,
  teamId: string,
  input: { adapterId: string; seqId: number; kind: RequestKind; input: Prisma.InputJsonValue },
): Promise<TinkerCallState> {
  await db.$executeRaw`
    INSERT INTO "TinkerCall" (id, "teamId", "adapterId", "seqId", kind, input)
    SELECT ${randomUUID()}, ${teamId}, a.id, ${input.seqId}::int, ${input.kind}::"RequestKind",
      ${JSON.stringify(input.input)}::jsonb
    FROM "Adapter" a WHERE a.id = ${input.adapterId} AND a."teamId" = ${teamId} AND a.status = 'ACTIVE'
    ON CONFLICT ("adapterId", "seqId") DO NOTHING`;
  const row = await db.tinkerCall.findFirst({
    where: { teamId, adapterId: input.adapterId, seqId: input.seqId },
    select: callSelect,
  });
  if (!row) throw new NotFoundError(`model ${input.adapterId} not found`);
  return row;
}

/** What became of a call that was next in line. */
export type TinkerCallOutcome = { requestId: string } | { errorStatus: number; error: string };

/** Refusals that a later try may not meet (the service was busy): the call stays recorded, unqueued. */
const RETRYABLE_STATUSES = new Set([429, 503]);

/**
 * Queues, in seq_id order, every recorded call of the adapter whose
 * predecessors have all been queued (or refused). `queue` turns a call's input
 * into a Request; it runs under the adapter's lock, one call at a time. A
 * retryable refusal (busy) stops the release and is returned: that call stays
 * next in line for the client's retry; else null.
 */
export async function releaseTinkerCalls(
  db: Db,
  teamId: string,
  adapterId: string,
  queue: (call: { kind: RequestKind; input: Prisma.JsonValue }) => Promise<TinkerCallOutcome>,
): Promise<{ errorStatus: number; error: string } | null> {
  return db.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`tinker:${adapterId}`}))`;
      const [done] = await tx.$queryRaw<{ last: number | null }[]>`
        SELECT max("seqId") AS last FROM "TinkerCall"
        WHERE "adapterId" = ${adapterId} AND "teamId" = ${teamId}
          AND ("requestId" IS NOT NULL OR "errorStatus" IS NOT NULL)`;
      let next = (done?.last ?? 0) + 1;
      for (;;) {
        const call = await tx.tinkerCall.findFirst({
          where: { teamId, adapterId, seqId: next, requestId: null, errorStatus: null },
          select: { id: true, kind: true, input: true },
        });
        if (!call) return null;
        // Queued outside this transaction (the Request and its job commit at once);
        // the lock keeps the next call from being queued before it.
        const outcome = await queue({ kind: call.kind, input: call.input });
        if ("errorStatus" in outcome && RETRYABLE_STATUSES.has(outcome.errorStatus)) return outcome;
        await tx.tinkerCall.update({
          where: { id: call.id },
          data: { input: Prisma.DbNull, ...outcome },
        });
        next++;
      }
    },
    { timeout: 60_000, maxWait: 30_000 },
  );
}

/** A recorded call of this team by its id, or null. */
export function findTinkerCall(db: DbTx, teamId: string, id: string): Promise<TinkerCallState | null> {
  return db.tinkerCall.findFirst({ where: { id, teamId }, select: callSelect });
}

/** The adapter and input of a request of this team, or null. */
export function requestInput(db: DbTx, teamId: string, requestId: string) {
  return db.request.findFirst({ where: { id: requestId, teamId }, select: { adapterId: true, input: true } });
}
