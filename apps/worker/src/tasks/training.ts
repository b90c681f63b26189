// Training calls on an adapter placed on this worker, one at a time in seq order
// (they share the adapter's queue).
import { archiveAdapter, type Db, finishRelease, type Prisma } from "@opentinker/db";
import {
  RELEASED_CHECKPOINT,
  ZForwardInput,
  ZLoadStateInput,
  ZOptimStepInput,
  ZSaveStateInput,
  ZSaveWeightsInput,
} from "@opentinker/protocol";
import type { Task } from "graphile-worker";
import type { EngineHost } from "../engine-host.ts";
import type { FollowUps } from "../queue.ts";
import { type ClaimedRequest, requestTask } from "./request-task.ts";

/** When an object saved now with this TTL may be deleted (null: never). */
const expiresIn = (ttlSeconds: number | undefined) =>
  ttlSeconds === undefined ? null : new Date(Date.now() + ttlSeconds * 1000);

/**
 * Lets an idle adapter go to make room: its state is saved (the one
 * RELEASED_CHECKPOINT, replaced each time; the next call restores it), then it
 * leaves this worker unless calls came in behind the release.
 */
async function release(db: Db, host: EngineHost, workerId: string, request: ClaimedRequest): Promise<void> {
  const adapterId = request.adapterId as string;
  if (host.holds(adapterId)) {
    const session = await host.session(request.teamId, adapterId);
    await session.checkpoint(RELEASED_CHECKPOINT, undefined, { replace: true });
  }
  if (await finishRelease(db, request.teamId, adapterId, workerId, request.seq ?? 0)) host.release(adapterId);
}

async function runTraining(
  db: Db,
  host: EngineHost,
  workerId: string,
  request: ClaimedRequest,
): Promise<Prisma.InputJsonValue | null> {
  if (!request.adapterId) throw new RangeError(`request ${request.id} names no adapter`);
  if (request.busyJobId)
    throw new RangeError(`adapter ${request.adapterId} is being trained by job ${request.busyJobId}`);
  if (request.kind === "UNLOAD") {
    // Its state is not opened just to be dropped.
    host.release(request.adapterId);
    await archiveAdapter(db, request.teamId, request.adapterId);
    return null;
  }
  if (request.kind === "RELEASE") {
    await release(db, host, workerId, request);
    return null;
  }
  const session = await host.session(request.teamId, request.adapterId);
  switch (request.kind) {
    case "FORWARD":
    case "FORWARD_BACKWARD": {
      const { data, lossFn, lossFnConfig } = ZForwardInput.parse(request.input);
      const output =
        request.kind === "FORWARD"
          ? session.forward(data, lossFn, lossFnConfig)
          : await session.forwardBackward(data, lossFn, lossFnConfig);
      return output as Prisma.InputJsonValue;
    }
    case "OPTIM_STEP":
      return (await session.optimStep(ZOptimStepInput.parse(request.input).adam)) as Prisma.InputJsonValue;
    case "SAVE_WEIGHTS_FOR_SAMPLER": {
      const { ttlSeconds } = ZSaveWeightsInput.parse(request.input);
      const { handle, version } = await session.publish(undefined, { expiresAt: expiresIn(ttlSeconds) });
      return { handle, version };
    }
    case "SAVE_STATE": {
      const { name, replace, ttlSeconds } = ZSaveStateInput.parse(request.input);
      const saved = await session.checkpoint(name, undefined, { replace, expiresAt: expiresIn(ttlSeconds) });
      return { path: saved.path };
    }
    case "LOAD_STATE": {
      const { path, optimizer } = ZLoadStateInput.parse(request.input);
      await session.restore(path, { optimizer });
      return null;
    }
    default:
      throw new RangeError(`request kind ${request.kind} is not a training call`);
  }
}

/** `followUps` hears when a call's adapter has more calls queued behind it. */
export function trainingTask(db: Db, host: EngineHost, workerId: string, followUps: FollowUps): Task {
  return requestTask(db, (request) => runTraining(db, host, workerId, request), followUps);
}
