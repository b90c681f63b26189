// A call's optional `waitMs`: answer with the result when it is ready in time.
import type { EnqueuedRequest } from "@opentinker/db";
import type { FutureRef } from "@opentinker/protocol";
import type { Caller, Context } from "./init.ts";

export async function withInlineWait(
  ctx: Context & { caller: Caller },
  enqueued: EnqueuedRequest,
  waitMs: number | undefined,
): Promise<FutureRef> {
  if (!waitMs) return enqueued;
  const row = await ctx.waiter.wait(ctx.caller.teamId, enqueued.requestId, waitMs);
  if (!row || row.status === "QUEUED" || row.status === "RUNNING") return enqueued;
  return {
    ...enqueued,
    result: {
      requestId: row.id,
      kind: row.kind,
      status: row.status,
      output: row.output ?? null,
      error: row.error,
    },
  };
}
