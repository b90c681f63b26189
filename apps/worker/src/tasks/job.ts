// The queue task that runs a server-side job. A job whose worker died is picked
// up again by another worker (the queue releases the lost worker's lock) and
// resumes from its last checkpoint; a worker that drains checkpoints and hands
// the job back to the queue.
import { type Db, finishJob, requeueJob, rewindJob, startJob } from "@opentinker/db";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { EngineHost } from "../engine-host.ts";
import { applyRetention } from "../jobs/retention.ts";
import { checkpointName, runJob } from "../jobs/run-job.ts";
import { errorMessage } from "./request-task.ts";

const ZPayload = z.object({ jobId: z.string().min(1) });

async function loadJob(db: Db, jobId: string) {
  return db.job.findUnique({ where: { id: jobId }, include: { environment: true } });
}

type JobRow = NonNullable<Awaited<ReturnType<typeof loadJob>>>;

/** Restores the job's latest checkpoint (saving step 0 on a first start); returns its step. */
async function resumePoint(db: Db, job: JobRow, session: Awaited<ReturnType<EngineHost["session"]>>) {
  // The job's own step is in the name (the trainer's step can lag it: steps with
  // nothing to train on apply no optimizer step).
  const prefix = `job-${job.id}-step-`;
  const saved = await db.checkpoint.findMany({ where: { jobId: job.id, name: { startsWith: prefix } } });
  const latest = saved
    .map((c) => ({ name: c.name, step: Number(c.name.slice(prefix.length)) }))
    .sort((a, b) => b.step - a.step)[0];
  if (!latest) {
    const name = checkpointName(job.id, 0);
    await session.saveState(name, job.id);
    await rewindJob(db, job, 0, name);
    return 0;
  }
  await session.loadState(session.statePath(latest.name));
  await rewindJob(db, job, latest.step, latest.name);
  return latest.step;
}

/** How often a running job looks for its cancellation. */
const CANCEL_POLL_MS = 500;

/**
 * Aborts a running job's signal when it is cancelled or the worker drains, so
 * the step in flight ends at once (its rollout is cut short and not stored).
 */
function watchJob(db: Db, host: EngineHost, jobId: string) {
  const controller = new AbortController();
  let cancelled = false;
  const check = async () => {
    const row = await db.job.findUnique({ where: { id: jobId }, select: { cancelRequestedAt: true } });
    if (row?.cancelRequestedAt) {
      cancelled = true;
      controller.abort();
    }
  };
  const timer = setInterval(() => void check().catch(() => {}), CANCEL_POLL_MS);
  return {
    signal: AbortSignal.any([controller.signal, host.drainSignal]),
    cancelled: () => cancelled,
    /** Asked at each step boundary too: a cancel that came between polls. */
    shouldStop: async () => {
      if (!host.draining && !cancelled) await check();
      return host.draining || cancelled;
    },
    stop: () => clearInterval(timer),
  };
}

export function jobTask(db: Db, host: EngineHost, workerId: string): Task {
  return async (payload) => {
    const { jobId } = ZPayload.parse(payload);
    const job = await loadJob(db, jobId);
    if (!job || !["QUEUED", "RUNNING"].includes(job.status)) return;
    if (job.cancelRequestedAt) return finishJob(db, job, "CANCELLED");
    await startJob(db, job, workerId);
    // The job holds its adapter's training state here, rebuilt from the checkpoint.
    await db.adapter.update({ where: { id: job.adapterId }, data: { workerId } });
    host.release(job.adapterId);
    const watch = watchJob(db, host, job.id);
    try {
      const session = await host.session(job.teamId, job.adapterId);
      const startStep = await resumePoint(db, job, session);
      await runJob({ host, job, session, startStep, shouldStop: watch.shouldStop, signal: watch.signal });
      if (host.draining && !watch.cancelled()) {
        // Checkpoint where it stopped, so another worker continues from there.
        const { step } = await db.job.findUniqueOrThrow({ where: { id: job.id }, select: { step: true } });
        const name = checkpointName(job.id, step);
        if (
          !(await db.checkpoint.findUnique({ where: { adapterId_name: { adapterId: job.adapterId, name } } }))
        )
          await session.saveState(name, job.id);
        await requeueJob(db, job);
        return;
      }
      await finishJob(db, job, watch.cancelled() ? "CANCELLED" : "SUCCEEDED");
    } catch (error) {
      await finishJob(db, job, "FAILED", errorMessage(error));
    } finally {
      watch.stop();
      host.release(job.adapterId);
      await db.adapter.updateMany({ where: { id: job.adapterId, workerId }, data: { workerId: null } });
    }
    const retention = (job.config as { retention?: unknown } | null)?.retention;
    await applyRetention(db, host.store, job.id, typeof retention === "string" ? retention : "keep-final");
  };
}
