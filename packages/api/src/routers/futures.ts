// A call's future: its state now, or once it finishes (woken by the worker's notice).
import { getRequest } from "@opentinker/db";
import { ZFutureIdRequest, ZFutureState, ZWaitFutureRequest } from "@opentinker/protocol";
import { futureState } from "../present.ts";
import { found, router, teamRoute } from "../trpc.ts";

export const futuresRouter = router({
  get: teamRoute("GET", "/v1/futures/{requestId}", "futures")
    .input(ZFutureIdRequest)
    .output(ZFutureState)
    .query(async ({ ctx, input }) => {
      const row = await getRequest(ctx.db, ctx.caller.teamId, input.requestId);
      return futureState(found(row, "request", input.requestId));
    }),

  wait: teamRoute("POST", "/v1/futures/{requestId}/wait", "futures")
    .input(ZWaitFutureRequest)
    .output(ZFutureState)
    .mutation(async ({ ctx, input }) => {
      const row = await ctx.waiter.wait(ctx.caller.teamId, input.requestId, input.timeoutMs);
      return futureState(found(row, "request", input.requestId));
    }),
});
