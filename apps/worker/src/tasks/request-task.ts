import { claimRequest, type Db, finishRequest, type Prisma, ZRequestTaskPayload } from "@opentinker/db";
import type { Task } from "graphile-worker";
import { z } from "zod";
import { retryTransient } from "../faults.ts";
import type { FollowUps } from "../queue.ts";

export type ClaimedRequest = Awaited<ReturnType<typeof claimRequest>>[number];

export function errorMessage(error: unknown): string {
  if (error instanceof z.ZodError) {
    const issue = error.issues[0];
    return `${issue?.path.join(".") || "input"}: ${issue?.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * A queue task that runs one API request: claims its row, runs it, and writes
 * the output or the error back (waking its waiters). Errors are the caller's
 * (bad input, unknown handle), so they fail the request, never the queue job.
 */
export function requestTask(
  db: Db,
  run: (request: ClaimedRequest) => Promise<Prisma.InputJsonValue | null>,
  followUps?: FollowUps,
): Task {
  return async (payload, helpers) => {
    const { requestId } = ZRequestTaskPayload.parse(payload);
    const [request] = await claimRequest(db, requestId);
    if (!request) return; // already finished or cancelled
    let outcome: Parameters<typeof finishRequest>[2];
    try {
      const output = await run(request);
      outcome = { output: output ?? null } as { output: Prisma.InputJsonValue };
    } catch (error) {
      outcome = { error: errorMessage(error) };
    }
    // Retried here, not by the queue: a queue retry would run the call a second time.
    const { followedUp } = await retryTransient(`request ${requestId}: store its outcome`, () =>
      finishRequest(db, requestId, outcome),
    );
    if (followedUp) followUps?.mark(helpers.job.id);
  };
}
