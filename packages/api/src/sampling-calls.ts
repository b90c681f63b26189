// How every sampling call is made, whichever front it comes through (the
// sampling router, the dashboard's playground): its policy resolved within the
// caller's team, its input checked against that policy's base model, then
// queued for the base model's workers.
import { type Db, enqueueSamplingRequest, getBaseModelLimits, snapshotPolicy } from "@opentinker/db";
import type { FutureRef, ModelLimits, PolicyRef } from "@opentinker/protocol";
import type { Caller, Context } from "./context.ts";
import { enqueueWithInlineWait } from "./inline-wait.ts";
import { ShortCache } from "./short-cache.ts";
import { badRequest, found } from "./trpc.ts";

/** What a policy reference resolves to: the base model it runs on, and its adapter (none for the bare base). */
export interface SamplingTarget {
  baseModelId: string;
  model: ModelLimits;
  adapterId: string | null;
}

/**
 * Policies seen in the last few seconds: a snapshot's adapter and base model
 * never change, and a base model is rarely re-registered, so every sampling
 * call of a rollout need not look them up again.
 */
const recent = new ShortCache<SamplingTarget>(5_000);

/** The policy within the caller's team: another team's handle answers like an unknown one. */
export async function resolvePolicy(db: Db, teamId: string, policy: PolicyRef): Promise<SamplingTarget> {
  const key = `${teamId}\0${"handle" in policy ? policy.handle : `base:${policy.baseModel}`}`;
  const hit = recent.get(key);
  if (hit) return hit;
  const target = await lookUpPolicy(db, teamId, policy);
  recent.set(key, target);
  return target;
}

async function lookUpPolicy(db: Db, teamId: string, policy: PolicyRef): Promise<SamplingTarget> {
  if ("baseModel" in policy) {
    const base = await getBaseModelLimits(db, policy.baseModel);
    if (!base) badRequest(`policy.baseModel: unknown base model "${policy.baseModel}"`);
    return { baseModelId: base.id, model: base, adapterId: null };
  }
  const snapshot = found(await snapshotPolicy(db, teamId, policy.handle), "policy", policy.handle);
  return { baseModelId: snapshot.baseModel.id, model: snapshot.baseModel, adapterId: snapshot.adapterId };
}

/**
 * A sampling call of either kind, queued (with `waitMs`, answered with its
 * result when it is ready in time). A call refused here writes nothing.
 */
export async function enqueueSampling(
  ctx: Context & { caller: Caller },
  kind: "SAMPLE" | "COMPUTE_LOGPROBS",
  input: { policy: PolicyRef; waitMs?: number | undefined },
  check: (model: ModelLimits) => string | null,
): Promise<FutureRef> {
  const { waitMs, ...payload } = input;
  const { baseModelId, adapterId, model } = await resolvePolicy(ctx.db, ctx.caller.teamId, input.policy);
  const problem = check(model);
  if (problem) badRequest(problem);
  return enqueueWithInlineWait(ctx, waitMs, (requestId) =>
    enqueueSamplingRequest(ctx.db, ctx.caller.teamId, { kind, baseModelId, adapterId, payload, requestId }),
  );
}
