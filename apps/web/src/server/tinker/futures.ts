// retrieve_future: a call's result in the shape the SDK expects for its kind
// (protobuf for forward/backward and sampling when the client accepts it), a
// refusal as `{ error, category }`, or `try_again` after a long poll on the
// request waiter (held below the SDK's 45 s read timeout; it polls again at once).
import {
  getAdapter,
  pollTinkerCall,
  type RequestOutcome,
  requestInput,
  tinkerCallExpiryMs,
} from "@opentinker/db";
import {
  formatTinkerPath,
  parseStatePath,
  REQUEST_OUTPUTS,
  ZForwardBackwardOutput,
  ZSampleResponse,
} from "@opentinker/protocol";
import { forwardBackwardJson, sampleJson, TinkerError } from "./convert.ts";
import { CREATED_MODEL_FUTURE } from "./models.ts";
import { ZRetrieveFutureBody } from "./schemas.ts";
import { parseBody, type Reply, type Scope } from "./scope.ts";
import { samplerForSavedWeights } from "./sessions.ts";
import { SAMPLING_SESSION_WEIGHTS } from "./training.ts";
import { encodeForwardBackwardOutput, encodeSampleResponse } from "./wire.ts";

/** How long one retrieve_future holds the connection before answering try_again. */
export const LONG_POLL_MS = 25_000;
/**
 * How long a poll of a call not yet queued waits (its result wakes it, should
 * another call release it and it finish meanwhile) before the call is looked at
 * again: held for an earlier seq_id (also how soon its expiry is seen), or next
 * in line but refused as busy (no free slot, the team's quota), tried again.
 */
const HELD_CALL_WAIT_MS = 1_000;
const BUSY_CALL_WAIT_MS = 500;

const tryAgain = (requestId: string): Reply => ({
  json: { type: "try_again", request_id: requestId, queue_state: "active" },
});

const failed = (error: string, category: "user" | "server" | "unknown"): Reply => ({
  json: { error, category },
});

async function present(scope: Scope, row: RequestOutcome, protobuf: boolean): Promise<Reply> {
  if (row.status === "FAILED") return failed(row.error ?? "failed", "unknown");
  if (row.status === "CANCELLED") return failed(row.error ?? "cancelled", "user");
  switch (row.kind) {
    case "FORWARD":
    case "FORWARD_BACKWARD": {
      const output = ZForwardBackwardOutput.parse(row.output);
      return protobuf
        ? { protobuf: encodeForwardBackwardOutput(output) }
        : { json: forwardBackwardJson(output) };
    }
    case "SAMPLE": {
      const output = ZSampleResponse.parse(row.output);
      return protobuf ? { protobuf: encodeSampleResponse(output) } : { json: sampleJson(output) };
    }
    case "OPTIM_STEP":
      return { json: { type: "optim_step", metrics: REQUEST_OUTPUTS.OPTIM_STEP.parse(row.output).metrics } };
    case "SAVE_WEIGHTS_FOR_SAMPLER":
    case "SAVE_STATE":
    case "LOAD_STATE":
    case "UNLOAD":
      return { json: await presentWeightsCall(scope, row) };
    default:
      return { json: row.output };
  }
}

/** What a weights call (save, load, unload) answers, from the input it ran with. */
async function presentWeightsCall(scope: Scope, row: RequestOutcome) {
  const call = await requestInput(scope.ctx.db, scope.ctx.caller.teamId, row.id);
  const model = call?.adapterId ?? "";
  const input = (call?.input ?? {}) as { name?: string; path?: string };
  switch (row.kind) {
    case "SAVE_WEIGHTS_FOR_SAMPLER": {
      const name = input.name ?? "";
      const path = formatTinkerPath({ model, kind: "sampler_weights", name });
      const sampler = name.startsWith(SAMPLING_SESSION_WEIGHTS)
        ? await samplerForSavedWeights(scope, { requestId: row.id, model, path })
        : null;
      return { type: "save_weights_for_sampler", path, sampling_session_id: sampler };
    }
    case "SAVE_STATE":
      return {
        type: "save_weights",
        path: formatTinkerPath({ model, kind: "weights", name: input.name ?? "" }),
      };
    case "LOAD_STATE": {
      const state = parseStatePath(input.path ?? "");
      const path = state
        ? formatTinkerPath({ model: state.adapter, kind: "weights", name: state.name })
        : null;
      return { type: "load_weights", path, model_id: model };
    }
    default:
      return { type: "unload_model", model_id: model };
  }
}

export async function retrieveFuture(scope: Scope, body: unknown, protobuf: boolean): Promise<Reply> {
  const { request_id } = parseBody(ZRetrieveFutureBody, body);
  const teamId = scope.ctx.caller.teamId;
  if (request_id.startsWith(CREATED_MODEL_FUTURE)) {
    const adapterId = request_id.slice(CREATED_MODEL_FUTURE.length);
    if (!(await getAdapter(scope.ctx.db, teamId, adapterId)))
      throw new TinkerError(404, `future ${request_id} not found`);
    return { json: { type: "create_model", model_id: adapterId } };
  }
  // Most futures name their Request (a Tinker call's Request takes the call's id); else a call not yet queued.
  const row =
    (await scope.ctx.waiter.wait(teamId, request_id, LONG_POLL_MS)) ?? (await heldCall(scope, request_id));
  // Another team's future answers like a missing one.
  if (!row) throw new TinkerError(404, `future ${request_id} not found`);
  if ("reply" in row) return row.reply;
  if (row.status === "QUEUED" || row.status === "RUNNING") return tryAgain(request_id);
  return present(scope, row, protobuf);
}

/**
 * A Tinker call that was not a Request when asked about: its model's calls are
 * moved on (held calls past the expiry refused, due ones queued), then it is
 * waited for while it waits for an earlier seq_id (or, refused as busy, briefly).
 */
async function heldCall(scope: Scope, id: string): Promise<RequestOutcome | { reply: Reply } | null> {
  const teamId = scope.ctx.caller.teamId;
  const progress = await pollTinkerCall(scope.ctx.db, teamId, id);
  if (!progress) return null;
  if ("refused" in progress) {
    const { status, message } = progress.refused;
    return { reply: failed(message, status < 500 ? "user" : "server") };
  }
  if ("requestId" in progress) return scope.ctx.waiter.wait(teamId, progress.requestId, LONG_POLL_MS);
  const waitMs =
    progress.waiting === "busy" ? BUSY_CALL_WAIT_MS : Math.min(HELD_CALL_WAIT_MS, tinkerCallExpiryMs());
  // Released by another call meanwhile, it may even finish within the wait.
  const outcome = await (await scope.ctx.waiter.expect(id)).result(teamId, waitMs);
  return outcome ?? { reply: tryAgain(id) };
}
