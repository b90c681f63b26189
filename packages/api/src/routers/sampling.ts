// Sampling calls by policy handle (or the bare base model): the handle must be a
// snapshot of the caller's team; the call goes to the base model's workers.
import { type Db, enqueueSamplingRequest, getBaseModelLimits, snapshotPolicy } from "@opentinker/db";
import {
  logprobSequenceError,
  type ModelLimits,
  type PolicyRef,
  samplePromptError,
  ZComputeLogprobsInput,
  ZFutureRef,
  ZSampleInput,
  ZWaitMs,
} from "@opentinker/protocol";
import type { Caller, Context } from "../context.ts";
import { enqueueWithInlineWait } from "../inline-wait.ts";
import { ShortCache } from "../short-cache.ts";
import { badRequest, found, router, teamRoute } from "../trpc.ts";

interface Target {
  baseModelId: string;
  model: ModelLimits;
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
    const base = await getBaseModelLimits(db, policy.baseModel);
    if (!base) badRequest(`policy.baseModel: unknown base model "${policy.baseModel}"`);
    return { baseModelId: base.id, model: base, adapterId: null };
  }
  // Within the caller's team: another team's handle answers like an unknown one.
  const snapshot = found(await snapshotPolicy(db, teamId, policy.handle), "policy", policy.handle);
  return { baseModelId: snapshot.baseModel.id, model: snapshot.baseModel, adapterId: snapshot.adapterId };
}

/**
 * A sampling call of either kind: its policy resolved within the caller's team,
 * its input checked against that policy's base model, then queued.
 */
async function enqueueSampling(
  ctx: Context & { caller: Caller },
  kind: "SAMPLE" | "COMPUTE_LOGPROBS",
  input: { policy: PolicyRef; waitMs?: number | undefined },
  check: (model: ModelLimits) => string | null,
) {
  const { waitMs, ...payload } = input;
  const { baseModelId, adapterId, model } = await resolvePolicy(ctx.db, ctx.caller.teamId, input.policy);
  const problem = check(model);
  if (problem) badRequest(problem);
  return enqueueWithInlineWait(ctx, waitMs, (requestId) =>
    enqueueSamplingRequest(ctx.db, ctx.caller.teamId, { kind, baseModelId, adapterId, payload, requestId }),
  );
}

export const samplingRouter = router({
  sample: teamRoute("POST", "/v1/sampling/sample", "sampling")
    .input(ZSampleInput.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(({ ctx, input }) =>
      enqueueSampling(ctx, "SAMPLE", input, (model) => samplePromptError(input.prompt, model)),
    ),

  computeLogprobs: teamRoute("POST", "/v1/sampling/compute-logprobs", "sampling")
    .input(ZComputeLogprobsInput.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(({ ctx, input }) =>
      enqueueSampling(ctx, "COMPUTE_LOGPROBS", input, (model) => logprobSequenceError(input.sequence, model)),
    ),
});
