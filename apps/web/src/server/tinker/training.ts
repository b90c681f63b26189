// Training calls over the Tinker protocol (forward, forward_backward,
// optim_step, save_weights_for_sampler; save_weights and load_weights in
// weights.ts): each is checked as our training API checks it, then queued in the
// model's seq_id order (packages/db/src/tinker-calls.ts), as one Request at most.
import { randomUUID } from "node:crypto";
import { checkTrainingCall } from "@opentinker/api";
import { submitTinkerCall, type TinkerRefusal, type TrainingRequestKind } from "@opentinker/db";
import { TRPCError } from "@trpc/server";
import { adamParams, forwardInput, TinkerError } from "./convert.ts";
import { trpcRefusal } from "./errors.ts";
import { ZSaveWeightsForSamplerBody } from "./rest-schemas.ts";
import { type TinkerForwardBackwardBody, ZOptimStepBody } from "./schemas.ts";
import { parseBody, type Scope } from "./scope.ts";

/** A call's check refused it (4xx): its refusal; anything else (a failure) is thrown. */
function checkRefusal(error: unknown): { refusal: TinkerRefusal } {
  const refusal = error instanceof TRPCError ? trpcRefusal(error) : null;
  if (!refusal || refusal.errorStatus >= 500) throw error;
  return { refusal: { status: refusal.errorStatus, message: refusal.error } };
}

/**
 * A training call in the model's seq_id order: checked as our training API
 * checks it, then queued at once when every earlier call has been, else held
 * (its future answers try_again meanwhile). A call sent again gets the same
 * future; nothing of a refused call runs. A call without a seq_id is queued as it comes.
 */
export async function trainingCall(
  scope: Scope,
  kind: TrainingRequestKind,
  adapterId: string,
  seqId: number | null | undefined,
  input: object,
) {
  // A refused check still goes to the call's record: its seq_id is settled (or, sent before, it is that call).
  const checked = await checkTrainingCall(scope.ctx, kind, input).then(
    ({ payload }) => ({ payload }),
    checkRefusal,
  );
  const answer = await submitTinkerCall(scope.ctx.db, scope.ctx.caller.teamId, {
    adapterId,
    seqId: seqId ?? null,
    kind,
    checked,
  });
  if ("refused" in answer) throw new TinkerError(answer.refused.status, answer.refused.message);
  // For a call with a seq_id, its own id (retrieve_future follows it to its Request): a resent call gets the same future.
  return { request_id: answer.future, model_id: adapterId };
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
