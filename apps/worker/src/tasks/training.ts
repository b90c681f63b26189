// Training calls on an adapter placed on this worker, one at a time in seq order
// (they share the adapter's queue).
import type { Db, Prisma } from "@opentinker/db";
import { ZForwardInput, ZLoadStateInput, ZOptimStepInput, ZSaveStateInput } from "@opentinker/protocol";
import type { Task } from "graphile-worker";
import type { EngineHost } from "../engine-host.ts";
import type { FollowUps } from "../queue.ts";
import { type ClaimedRequest, requestTask } from "./request-task.ts";

async function runTraining(host: EngineHost, request: ClaimedRequest): Promise<Prisma.InputJsonValue | null> {
  if (!request.adapterId) throw new RangeError(`request ${request.id} names no adapter`);
  if (request.busyJobId)
    throw new RangeError(`adapter ${request.adapterId} is being trained by job ${request.busyJobId}`);
  const session = await host.session(request.teamId, request.adapterId);
  switch (request.kind) {
    case "FORWARD":
    case "FORWARD_BACKWARD": {
      const { data, lossFn, lossFnConfig } = ZForwardInput.parse(request.input);
      const output =
        request.kind === "FORWARD"
          ? session.forward(data, lossFn, lossFnConfig)
          : session.forwardBackward(data, lossFn, lossFnConfig);
      return output as Prisma.InputJsonValue;
    }
    case "OPTIM_STEP":
      return (await session.optimStep(ZOptimStepInput.parse(request.input).adam)) as Prisma.InputJsonValue;
    case "SAVE_WEIGHTS_FOR_SAMPLER": {
      const { handle, version } = await session.publish();
      return { handle, version };
    }
    case "SAVE_STATE": {
      const saved = await session.checkpoint(ZSaveStateInput.parse(request.input).name);
      return { path: saved.path };
    }
    case "LOAD_STATE":
      await session.restore(ZLoadStateInput.parse(request.input).path);
      return null;
    default:
      throw new RangeError(`request kind ${request.kind} is not a training call`);
  }
}

/** `followUps` hears when a call's adapter has more calls queued behind it. */
export function trainingTask(db: Db, host: EngineHost, followUps: FollowUps): Task {
  return requestTask(db, (request) => runTraining(host, request), followUps);
}
