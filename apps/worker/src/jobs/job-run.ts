// One run of a server-side job on this worker. A job whose worker died is picked
// up again by another worker (the queue releases the lost worker's lock) and
// resumes from its last checkpoint; a worker that drains checkpoints and hands
// the job back to the queue.
import {
  type ClaimedJob,
  claimJobRun,
  type Db,
  endJobRun,
  findCheckpoint,
  type JobStatus,
  jobCancelRequested,
  jobProgress,
  latestJobCheckpoint,
  requeueJob,
  rewindJob,
} from "@opentinker/db";
import type { PolicySession } from "@opentinker/engine";
import { formatJobCheckpointName, type Retention } from "@opentinker/protocol";
import type { EngineHost } from "../engine-host.ts";
import { errorMessage } from "../tasks/request-task.ts";
import { deleteDroppedFiles, retentionOf } from "./retention.ts";
import { runJob } from "./run-job.ts";

/** Restores the job's latest checkpoint (saving step 0 on a first start); returns its step. */
async function resumePoint(db: Db, job: ClaimedJob, session: PolicySession): Promise<number> {
  const latest = await latestJobCheckpoint(db, job.teamId, job.id);
  if (!latest) {
    const name = formatJobCheckpointName({ jobId: job.id, step: 0 });
    await session.checkpoint(name, job.id);
    await rewindJob(db, job, 0, name);
    return 0;
  }
  await session.restore(session.statePath(latest.name));
  await rewindJob(db, job, latest.step, latest.name);
  return latest.step;
}

/** Checkpoints where a drained job stopped, so another worker continues from there. */
async function handBack(db: Db, job: ClaimedJob, session: PolicySession): Promise<void> {
  const name = formatJobCheckpointName({ jobId: job.id, step: await jobProgress(db, job.teamId, job.id) });
  if (!(await findCheckpoint(db, job.teamId, job.adapterId, name))) await session.checkpoint(name, job.id);
  await requeueJob(db, job);
}

/** How often a running job looks for its cancellation. */
const CANCEL_POLL_MS = 500;

/**
 * Aborts a running job's signal when it is cancelled or the worker drains, so
 * the step in flight ends at once (its rollout is cut short and not stored).
 */
function watchJob(db: Db, host: EngineHost, job: ClaimedJob) {
  const controller = new AbortController();
  let cancelled = false;
  const check = async () => {
    if (await jobCancelRequested(db, job.teamId, job.id)) {
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

export async function runQueuedJob(db: Db, host: EngineHost, workerId: string, jobId: string): Promise<void> {
  const job = await claimJobRun(db, jobId, workerId);
  if (!job) return;
  host.release(job.adapterId);
  const watch = watchJob(db, host, job);
  let end: { status: JobStatus; error: string | null; retention: Retention } | null = null;
  const retention = retentionOf(job.config);
  try {
    const session = await host.session(job.teamId, job.adapterId);
    const startStep = await resumePoint(db, job, session);
    await runJob({ host, job, session, startStep, shouldStop: watch.shouldStop, signal: watch.signal });
    if (host.draining && !watch.cancelled()) await handBack(db, job, session);
    else end = { status: watch.cancelled() ? "CANCELLED" : "SUCCEEDED", error: null, retention };
  } catch (error) {
    end = { status: "FAILED", error: errorMessage(error), retention };
  } finally {
    watch.stop();
    // Drop the in-memory state before the row frees the adapter for other calls.
    host.release(job.adapterId);
  }
  await deleteDroppedFiles(host.store, await endJobRun(db, job, workerId, end));
}
