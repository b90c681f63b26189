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
import { ShortCache } from "../../short-cache.ts";
import { badRequest, notFound, router, teamProcedure } from "../init.ts";
import { enqueueWithInlineWait } from "../inline-wait.ts";

interface Target {
  baseModelId: string;
  vocabSize: number;
  adapterId: string | null;
}

/**
 * Policies seen in the last few seconds: a snapshot's adapter and base model
 * never change, and a base model is rarely re-registered, so every sampling
 * call of a rollout need not look them up again.
 */
const recent = new ShortCache<Target>(5_000);

async function resolvePolicy(db: Db, teamId: string, policy: PolicyRef): Promise<Target> {
  const key = `${teamId}\0${"handle" in policy ? policy.handle : `base:${policy.baseModel}`}`;
  const hit = recent.get(key);
  if (hit) return hit;
  const target = await lookUpPolicy(db, teamId, policy);
  recent.set(key, target);
  return target;
}

async function lookUpPolicy(db: Db, teamId: string, policy: PolicyRef): Promise<Target> {
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
      return enqueueWithInlineWait(ctx, waitMs, (requestId) =>
        enqueueSamplingRequest(ctx.db, ctx.caller.teamId, {
          kind: "SAMPLE",
          ...target,
          payload: input,
          requestId,
        }),
      );
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
