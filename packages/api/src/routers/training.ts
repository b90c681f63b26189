// Training calls: validated here against the adapter's base model (shapes,
// token ranges, lengths, images), the adapter's own checkpoints and the
// snapshots the team may name as a KL's reference, so that a bad call is a 4xx
// naming the field with nothing written, then queued in the adapter's order as
// a future.
import {
  adapterBaseModel,
  type Db,
  enqueueTrainingRequest,
  findCheckpoint,
  findPublishedCheckpoint,
  snapshotPolicy,
  type TrainingRequestKind,
} from "@opentinker/db";
import {
  datumsError,
  type ModelLimits,
  parseStatePath,
  ZForwardInput,
  ZFutureRef,
  ZLoadStateInput,
  ZOptimStepInput,
  ZSaveStateInput,
  ZSaveWeightsInput,
  ZUnloadInput,
  ZWaitMs,
} from "@opentinker/protocol";
import { TRPCError } from "@trpc/server";
import type { z } from "zod";
import type { Caller, Context } from "../context.ts";
import { enqueueWithInlineWait } from "../inline-wait.ts";
import { ShortCache } from "../short-cache.ts";
import { badRequest, found, notFound, router, teamRoute } from "../trpc.ts";

// An adapter's base model never changes; remembered so that each call of a training loop need not look it up.
const baseModels = new ShortCache<ModelLimits>(60_000);

async function baseModelOf(db: Db, teamId: string, adapterId: string): Promise<ModelLimits> {
  const model = await baseModels.through(`${teamId}\0${adapterId}`, () =>
    adapterBaseModel(db, teamId, adapterId),
  );
  return found(model, "adapter", adapterId);
}

/** What a call's own check may consult: the database, the caller and the adapter's base model. */
interface CallScope {
  db: Db;
  caller: Caller;
  model: ModelLimits;
}

/** Checks what the schema cannot, throwing the 4xx that names the field. */
type PayloadCheck<T> = (payload: T, scope: CallScope) => void | Promise<void>;

/**
 * The snapshot a KL names as its reference: one the team may sample, over the
 * adapter's own base model (another team's unpublished one answers like a missing one).
 */
async function checkReferenceModel(handle: string, { db, caller, model }: CallScope): Promise<void> {
  const snapshot = found(await snapshotPolicy(db, caller.teamId, handle), "snapshot", handle);
  if (snapshot.baseModel.name !== model.name)
    badRequest(
      `lossFnConfig.referenceModel: ${handle} is a snapshot over ${snapshot.baseModel.name}, not the adapter's base model ${model.name}`,
    );
}

const checkForward: PayloadCheck<z.infer<typeof ZForwardInput>> = async (payload, scope) => {
  const problem = datumsError(payload.data, payload.lossFn, scope.model);
  if (problem) badRequest(problem);
  const reference = payload.lossFnConfig?.referenceModel;
  if (reference !== undefined) await checkReferenceModel(reference, scope);
};

const checkNewState: PayloadCheck<z.infer<typeof ZSaveStateInput>> = async (payload, { db, caller }) => {
  if (!payload.replace && (await findCheckpoint(db, caller.teamId, payload.adapterId, payload.name)))
    throw new TRPCError({
      code: "CONFLICT",
      message: `name: adapter ${payload.adapterId} already has a checkpoint named "${payload.name}"`,
    });
};

/** The team's own checkpoints load, and other teams' while published; any other path answers as a missing one. */
const checkSavedState: PayloadCheck<z.infer<typeof ZLoadStateInput>> = async (payload, { db, caller }) => {
  const state = parseStatePath(payload.path);
  if (!state) return notFound("checkpoint", payload.path);
  const found =
    state.team === caller.teamSlug
      ? await findCheckpoint(db, caller.teamId, state.adapter, state.name)
      : await findPublishedCheckpoint(db, state.team, state.adapter, state.name);
  if (!found) notFound("checkpoint", payload.path);
};

/** A training call's payload once checked, and the adapter it trains. */
export interface CheckedTrainingCall {
  adapterId: string;
  payload: object;
}

type TeamContext = Context & { caller: Caller };

/** Each kind's checks, as its procedure runs them (filled in as the procedures are defined). */
const checksByKind = new Map<
  TrainingRequestKind,
  (ctx: TeamContext, input: unknown) => Promise<CheckedTrainingCall>
>();

/**
 * Checks a training call as its procedure does (its schema, then against the
 * adapter's base model and the team's objects), throwing the same 4xx, for a
 * front that queues the call itself (the Tinker front, in its seq_id order).
 */
export function checkTrainingCall(
  ctx: TeamContext,
  kind: TrainingRequestKind,
  input: unknown,
): Promise<CheckedTrainingCall> {
  const check = checksByKind.get(kind);
  if (!check) throw new Error(`checkTrainingCall: no procedure for ${kind}`);
  return check(ctx, input);
}

async function checkPayload<T>(ctx: TeamContext, payload: T, check?: PayloadCheck<T>) {
  const { adapterId } = payload as { adapterId: string };
  const model = await baseModelOf(ctx.db, ctx.caller.teamId, adapterId);
  await check?.(payload, { db: ctx.db, caller: ctx.caller, model });
  return { adapterId, payload: payload as object };
}

function call<S extends z.ZodRawShape & { adapterId: z.ZodString }>(
  kind: TrainingRequestKind,
  path: `/${string}`,
  input: z.ZodObject<S>,
  check?: PayloadCheck<z.infer<z.ZodObject<S>>>,
) {
  checksByKind.set(kind, (ctx, raw) => {
    const parsed = input.safeParse(raw);
    // The cause carries zod's issues, so the message names the field as the procedure's would.
    if (!parsed.success)
      throw new TRPCError({ code: "BAD_REQUEST", message: parsed.error.message, cause: parsed.error });
    return checkPayload(ctx, parsed.data, check);
  });
  return teamRoute("POST", path, "training")
    .input(input.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(async ({ ctx, input: withWait }) => {
      // The generic schema's output type is opaque to TypeScript; the fields are there.
      const { waitMs, ...rest } = withWait as { waitMs?: number };
      const { adapterId, payload } = await checkPayload(ctx, rest as z.infer<z.ZodObject<S>>, check);
      return enqueueWithInlineWait(ctx, waitMs, (requestId) =>
        enqueueTrainingRequest(ctx.db, ctx.caller.teamId, {
          adapterId,
          kind,
          payload,
          requestId,
        }),
      );
    });
}

export const trainingRouter = router({
  forward: call("FORWARD", "/v1/training/forward", ZForwardInput, checkForward),
  forwardBackward: call("FORWARD_BACKWARD", "/v1/training/forward-backward", ZForwardInput, checkForward),
  optimStep: call("OPTIM_STEP", "/v1/training/optim-step", ZOptimStepInput),
  saveWeightsForSampler: call(
    "SAVE_WEIGHTS_FOR_SAMPLER",
    "/v1/training/save-weights-for-sampler",
    ZSaveWeightsInput,
  ),
  saveState: call("SAVE_STATE", "/v1/training/save-state", ZSaveStateInput, checkNewState),
  loadState: call("LOAD_STATE", "/v1/training/load-state", ZLoadStateInput, checkSavedState),
  unload: call("UNLOAD", "/v1/training/unload", ZUnloadInput),
});
