// A call's optional `waitMs`: answer with the result when it is ready in time.
import { randomUUID } from "node:crypto";
import type { EnqueuedRequest } from "@opentinker/db";
import type { FutureRef } from "@opentinker/protocol";
import type { Caller, Context } from "./context.ts";
import { futureState } from "./present.ts";

/**
 * Enqueues a call under a fresh request id and, with `waitMs`, waits for its
 * result. The waiter listens before the enqueue commits, so the result comes
 * straight from the worker's notice with no read of the request row.
 */
export async function enqueueWithInlineWait(
  ctx: Context & { caller: Caller },
  waitMs: number | undefined,
  enqueue: (requestId: string) => Promise<EnqueuedRequest>,
): Promise<FutureRef> {
  const requestId = randomUUID();
  const expectation = waitMs ? await ctx.waiter.expect(requestId) : null;
  let enqueued: EnqueuedRequest;
  try {
    enqueued = await enqueue(requestId);
  } catch (error) {
    expectation?.cancel();
    throw error;
  }
  if (!expectation || !waitMs) return enqueued;
  const outcome = await expectation.result(ctx.caller.teamId, waitMs);
  if (!outcome || outcome.status === "QUEUED" || outcome.status === "RUNNING") return enqueued;
  return { ...enqueued, result: futureState(outcome) };
}
