// Sampling calls by policy handle (or the bare base model): the handle must be a
// snapshot of the caller's team; the call goes to the base model's workers.
import { type Db, enqueueSamplingRequest } from "@opentinker/db";
import {
  type PolicyRef,
  tokenRangeError,
  ZComputeLogprobsInput,
  ZFutureRef,
  ZSampleInput,
  ZWaitMs,
} from "@opentinker/protocol";
import { badRequest, notFound, router, teamProcedure } from "../init.ts";
import { withInlineWait } from "../inline-wait.ts";

async function resolvePolicy(db: Db, teamId: string, policy: PolicyRef) {
  if ("baseModel" in policy) {
    const base = await db.baseModel.findUnique({ where: { name: policy.baseModel } });
    if (!base) badRequest(`policy.baseModel: unknown base model "${policy.baseModel}"`);
    return { baseModelId: base.id, vocabSize: base.vocabSize, adapterId: null };
  }
  const snapshot = await db.snapshot.findFirst({
    where: { teamId, handle: policy.handle },
    select: {
      adapterId: true,
      adapter: { select: { baseModel: { select: { id: true, vocabSize: true } } } },
    },
  });
  if (!snapshot) notFound("policy", policy.handle);
  const base = snapshot.adapter.baseModel;
  return { baseModelId: base.id, vocabSize: base.vocabSize, adapterId: snapshot.adapterId };
}

export const samplingRouter = router({
  sample: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/sampling/sample", protect: true, tags: ["sampling"] } })
    .input(ZSampleInput.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(async ({ ctx, input: { waitMs, ...input } }) => {
      const target = await resolvePolicy(ctx.db, ctx.caller.teamId, input.policy);
      const problem = tokenRangeError(input.prompt, target.vocabSize, "prompt");
      if (problem) badRequest(problem);
      const enqueued = await enqueueSamplingRequest(ctx.db, ctx.caller.teamId, {
        kind: "SAMPLE",
        ...target,
        payload: input,
      });
      return withInlineWait(ctx, enqueued, waitMs);
    }),

  computeLogprobs: teamProcedure
    .meta({
      openapi: { method: "POST", path: "/v1/sampling/compute-logprobs", protect: true, tags: ["sampling"] },
    })
    .input(ZComputeLogprobsInput)
    .output(ZFutureRef)
    .mutation(async ({ ctx, input }) => {
      const target = await resolvePolicy(ctx.db, ctx.caller.teamId, input.policy);
      const problem = tokenRangeError(input.sequence, target.vocabSize, "sequence");
      if (problem) badRequest(problem);
      return enqueueSamplingRequest(ctx.db, ctx.caller.teamId, {
        kind: "COMPUTE_LOGPROBS",
        ...target,
        payload: input,
      });
    }),
});
