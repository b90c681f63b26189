// Training calls over the Tinker protocol (forward, forward_backward,
// optim_step, save_weights_for_sampler; save_weights and load_weights in
// weights.ts): each becomes a call of our training API, in the model's seq_id order.
import { randomUUID } from "node:crypto";
import {
  findTinkerCall,
  type RequestKind,
  recordTinkerCall,
  releaseTinkerCalls,
  type TinkerCallOutcome,
} from "@opentinker/db";
import type { FutureRef } from "@opentinker/protocol";
import { TRPCError } from "@trpc/server";
import { adamParams, forwardInput, TinkerError } from "./convert.ts";
import { trpcRefusal } from "./errors.ts";
import { ZSaveWeightsForSamplerBody } from "./rest-schemas.ts";
import { type TinkerForwardBackwardBody, ZOptimStepBody } from "./schemas.ts";
import { parseBody, type Scope } from "./scope.ts";

/** Turns one training call into a Request through its procedure; a refusal becomes its status and message. */
async function queueCall(scope: Scope, kind: RequestKind, input: unknown): Promise<TinkerCallOutcome> {
  const procedures: Partial<Record<RequestKind, (i: never) => Promise<FutureRef>>> = {
    FORWARD: scope.api.training.forward,
    FORWARD_BACKWARD: scope.api.training.forwardBackward,
    OPTIM_STEP: scope.api.training.optimStep,
    SAVE_WEIGHTS_FOR_SAMPLER: scope.api.training.saveWeightsForSampler,
    SAVE_STATE: scope.api.training.saveState,
    LOAD_STATE: scope.api.training.loadState,
    UNLOAD: scope.api.training.unload,
  };
  const procedure = procedures[kind];
  if (!procedure) return { errorStatus: 400, error: `${kind} is not a training call of the Tinker front` };
  try {
    return { requestId: (await procedure(input as never)).requestId };
  } catch (error) {
    if (error instanceof TRPCError) return trpcRefusal(error);
    console.error(`web: tinker ${kind} failed: ${error instanceof Error ? error.message : error}`);
    return { errorStatus: 500, error: "internal error" };
  }
}

/**
 * A training call in the model's seq_id order: queued at once when every
 * earlier call has been, else held (its future answers try_again meanwhile).
 * A call without a seq_id is queued as it comes.
 */
export async function trainingCall(
  scope: Scope,
  kind: RequestKind,
  adapterId: string,
  seqId: number | null | undefined,
  input: object,
) {
  const teamId = scope.ctx.caller.teamId;
  const now = seqId == null ? await queueCall(scope, kind, input) : null;
  if (now) {
    if ("errorStatus" in now) throw new TinkerError(now.errorStatus, now.error);
    return { request_id: now.requestId, model_id: adapterId };
  }
  const recorded = await recordTinkerCall(scope.ctx.db, teamId, {
    adapterId,
    seqId: seqId as number,
    kind,
    input,
  });
  const busy =
    recorded.requestId === null && recorded.errorStatus === null
      ? await releaseTinkerCalls(scope.ctx.db, teamId, adapterId, (call) =>
          queueCall(scope, call.kind, call.input),
        )
      : null;
  const call = (await findTinkerCall(scope.ctx.db, teamId, recorded.id)) ?? recorded;
  // The service was busy (e.g. making room on a worker): the SDK sends the same call again.
  if (busy && call.requestId === null && call.errorStatus === null)
    throw new TinkerError(busy.errorStatus, busy.error);
  if (call.errorStatus !== null) throw new TinkerError(call.errorStatus, call.error ?? "refused");
  // Always the call's own id (retrieve_future follows it to its Request), so a resent call gets the same future.
  return { request_id: call.id, model_id: adapterId };
}

export function forwardBackward(scope: Scope, body: TinkerForwardBackwardBody, forwardOnly: boolean) {
  const input = forwardInput(body.model_id, body.forward_backward_input);
  return trainingCall(scope, forwardOnly ? "FORWARD" : "FORWARD_BACKWARD", body.model_id, body.seq_id, input);
}

export function optimStep(scope: Scope, body: unknown) {
  const input = parseBody(ZOptimStepBody, body);
  const adam = adamParams(input.adam_params);
  return trainingCall(scope, "OPTIM_STEP", input.model_id, input.seq_id, { adapterId: input.model_id, adam });
}

/** Weights saved without a name are for a sampling session of their own, which their answer names. */
export const SAMPLING_SESSION_WEIGHTS = "sampling-session-";

const unnamedWeights = (seq: number | null | undefined) =>
  `${SAMPLING_SESSION_WEIGHTS}${seq ?? 0}-${randomUUID().slice(0, 8)}`;

export function saveWeightsForSampler(scope: Scope, body: unknown) {
  const input = parseBody(ZSaveWeightsForSamplerBody, body);
  const name = input.path ?? unnamedWeights(input.sampling_session_seq_id);
  return trainingCall(scope, "SAVE_WEIGHTS_FOR_SAMPLER", input.model_id, input.seq_id, {
    adapterId: input.model_id,
    name,
    ...(input.ttl_seconds ? { ttlSeconds: input.ttl_seconds } : {}),
  });
}
