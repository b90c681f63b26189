import { getRequest, type RequestOutcome } from "@opentinker/db";
import { ZFutureState } from "@opentinker/protocol";
import { z } from "zod";
import { notFound, router, teamProcedure } from "../init.ts";

function state(row: RequestOutcome): z.infer<typeof ZFutureState> {
  return {
    requestId: row.id,
    kind: row.kind,
    status: row.status,
    output: row.output ?? null,
    error: row.error,
  };
}

/** The longest a single wait call holds the connection; clients wait again. */
const MAX_WAIT_MS = 60_000;

export const futuresRouter = router({
  get: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/futures/{requestId}", protect: true, tags: ["futures"] } })
    .input(z.object({ requestId: z.string().min(1) }))
    .output(ZFutureState)
    .query(async ({ ctx, input }) => {
      const row = await getRequest(ctx.db, ctx.caller.teamId, input.requestId);
      if (!row) notFound("request", input.requestId);
      return state(row);
    }),

  wait: teamProcedure
    .meta({
      openapi: { method: "POST", path: "/v1/futures/{requestId}/wait", protect: true, tags: ["futures"] },
    })
    .input(
      z.object({
        requestId: z.string().min(1),
        timeoutMs: z.number().int().min(0).max(MAX_WAIT_MS).default(30_000),
      }),
    )
    .output(ZFutureState)
    .mutation(async ({ ctx, input }) => {
      const row = await ctx.waiter.wait(ctx.caller.teamId, input.requestId, input.timeoutMs);
      if (!row) notFound("request", input.requestId);
      return state(row);
    }),
});
