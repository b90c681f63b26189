// Training calls: validated here (shapes, token ranges) so that a bad call is a
// 400 naming the field, then queued in the adapter's order as a future.
import { type Db, enqueueTrainingRequest, type TrainingRequestKind } from "@opentinker/db";
import {
  datumsError,
  type ForwardInput,
  ZForwardInput,
  ZFutureRef,
  ZLoadStateInput,
  ZOptimStepInput,
  ZSaveStateInput,
  ZSaveWeightsInput,
  ZWaitMs,
} from "@opentinker/protocol";
import type { z } from "zod";
import { ShortCache } from "../../short-cache.ts";
import { badRequest, notFound, router, teamProcedure } from "../init.ts";
import { enqueueWithInlineWait } from "../inline-wait.ts";

// An adapter's base model never changes; remembered so that each call of a training loop need not look it up.
const vocabularies = new ShortCache<number>(60_000);

async function vocabOf(db: Db, teamId: string, adapterId: string): Promise<number> {
  const vocabSize = await vocabularies.through(`${teamId}\0${adapterId}`, async () => {
    const adapter = await db.adapter.findFirst({
      where: { id: adapterId, teamId },
      select: { baseModel: { select: { vocabSize: true } } },
    });
    return adapter?.baseModel.vocabSize ?? null;
  });
  if (vocabSize === null) notFound("adapter", adapterId);
  return vocabSize;
}

/** Checks what the schema cannot (token ranges, lengths): a message naming the field, or null. */
type PayloadCheck<T> = (payload: T, vocabSize: number) => string | null;

const checkDatums: PayloadCheck<ForwardInput> = (payload, vocabSize) =>
  datumsError(payload.data, payload.lossFn, vocabSize);

function call<S extends z.ZodRawShape & { adapterId: z.ZodString }>(
  kind: TrainingRequestKind,
  path: `/${string}`,
  input: z.ZodObject<S>,
  check?: PayloadCheck<z.infer<z.ZodObject<S>>>,
) {
  return teamProcedure
    .meta({ openapi: { method: "POST", path, protect: true, tags: ["training"] } })
    .input(input.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(async ({ ctx, input: withWait }) => {
      // The generic schema's output type is opaque to TypeScript; the fields are there.
      const { waitMs, ...rest } = withWait as { waitMs?: number };
      const payload = rest as z.infer<z.ZodObject<S>>;
      const { adapterId } = payload as { adapterId: string };
      if (check) {
        const problem = check(payload, await vocabOf(ctx.db, ctx.caller.teamId, adapterId));
        if (problem) badRequest(problem);
      }
      return enqueueWithInlineWait(ctx, waitMs, (requestId) =>
        enqueueTrainingRequest(ctx.db, ctx.caller.teamId, {
          adapterId,
          kind,
          payload: payload as object,
          requestId,
        }),
      );
    });
}

export const trainingRouter = router({
  forward: call("FORWARD", "/v1/training/forward", ZForwardInput, checkDatums),
  forwardBackward: call("FORWARD_BACKWARD", "/v1/training/forward-backward", ZForwardInput, checkDatums),
  optimStep: call("OPTIM_STEP", "/v1/training/optim-step", ZOptimStepInput),
  saveWeightsForSampler: call(
    "SAVE_WEIGHTS_FOR_SAMPLER",
    "/v1/training/save-weights-for-sampler",
    ZSaveWeightsInput,
  ),
  saveState: call("SAVE_STATE", "/v1/training/save-state", ZSaveStateInput),
  loadState: call("LOAD_STATE", "/v1/training/load-state", ZLoadStateInput),
});
