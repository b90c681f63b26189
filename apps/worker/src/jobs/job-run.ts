// One run of a server-side job on this worker. A job whose worker died is picked
// up again by another worker (the queue releases the lost worker's lock) and
// resumes from its last checkpoint; a worker that drains checkpoints and hands
// the job back to the queue. A transient fault the step's retries did not
// outlast sends the job back to the queue the same way (after a backoff); only
// a user or internal fault ends it FAILED, with the fault's class.
import {
  type ClaimedJob,
  claimJobRun,
  type Db,
  endJobRun,
  type JobEnd,
  jobCancelRequested,
  jobProgress,
  latestJobCheckpoint,
  requeueAfterFault,
  requeueJob,
  rewindJob,
} from "@opentinker/db";
import type { PolicySession } from "@opentinker/engine";
import type { EngineHost } from "../engine-host.ts";
import { classifyFault, resumeDelayMs, retryTransient } from "../faults.ts";
import { errorMessage } from "../tasks/request-task.ts";
import { saveJobCheckpoint } from "./job-checkpoints.ts";
import { deleteDroppedFiles, retentionOf } from "./retention.ts";
import { runJob } from "./run-job.ts";

/** Restores the job's latest checkpoint (saving step 0 on a first start); returns its step. */
async function resumePoint(db: Db, job: ClaimedJob, session: PolicySession): Promise<number> {
  const latest = await retryTransient(`job ${job.id}: find its checkpoint`, () =>
    latestJobCheckpoint(db, job.teamId, job.id),
  );
  const name = latest ? latest.name : await saveJobCheckpoint(db, job, session, 0);
  if (latest) await session.restore(session.statePath(latest.name));
  const step = latest?.step ?? 0;
  await retryTransient(`job ${job.id}: rewind to step ${step}`, () => rewindJob(db, job, step, name));
  return step;
}

/** Checkpoints where a drained job stopped, so another worker continues from there. */
async function handBack(db: Db, job: ClaimedJob, session: PolicySession): Promise<void> {
  const step = await retryTransient(`job ${job.id}: read its progress`, () =>
    jobProgress(db, job.teamId, job.id),
  );
  await saveJobCheckpoint(db, job, session, step);
  await retryTransient(`job ${job.id}: back to the queue`, () => requeueJob(db, job));
}

/**
 * A transient fault outlasted the step's retries: the job goes back to the
 * queue, to resume from its last checkpoint on any worker after a backoff.
 */
async function resumeLater(db: Db, job: ClaimedJob, workerId: string, error: unknown): Promise<void> {
  const message = errorMessage(error);
  const delayMs = resumeDelayMs(job.faults + 1);
  console.error(
    `worker: job ${job.id} met a transient fault (${message}); back to the queue, resuming from its last checkpoint in ${delayMs} ms`,
  );
  await retryTransient(`job ${job.id}: back to the queue`, () =>
    requeueAfterFault(db, job, workerId, { message, delayMs }),
  );
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

/** How a run that threw ends: cancelled when asked to, a transient fault resumes later (null), else FAILED with its class. */
function endOfFault(error: unknown, cancelled: boolean, retention: JobEnd["retention"]): JobEnd | null {
  if (cancelled) return { status: "CANCELLED", error: null, retention };
  const fault = classifyFault(error);
  if (fault === "TRANSIENT") return null;
  return { status: "FAILED", error: errorMessage(error), errorClass: fault, retention };
}

export async function runQueuedJob(db: Db, host: EngineHost, workerId: string, jobId: string): Promise<void> {
  const job = await retryTransient(`job ${jobId}: claim`, () => claimJobRun(db, jobId, workerId));
  if (!job) return;
  host.release(job.adapterId);
  const watch = watchJob(db, host, job);
  let end: JobEnd | null = null;
  let transient: unknown = null;
  const retention = retentionOf(job.config);
  try {
    const session = await host.session(job.teamId, job.adapterId);
    const startStep = await resumePoint(db, job, session);
    await runJob({ host, job, session, startStep, shouldStop: watch.shouldStop, signal: watch.signal });
    if (host.draining && !watch.cancelled()) await handBack(db, job, session);
    else end = { status: watch.cancelled() ? "CANCELLED" : "SUCCEEDED", error: null, retention };
  } catch (error) {
    end = endOfFault(error, watch.cancelled(), retention);
    if (end === null) transient = error;
    else if (end.status === "FAILED")
      console.error(`worker: job ${job.id} failed (${end.errorClass?.toLowerCase()} error): ${end.error}`);
  } finally {
    watch.stop();
    // Drop the in-memory state before the row frees the adapter for other calls.
    host.release(job.adapterId);
  }
  if (transient !== null) return resumeLater(db, job, workerId, transient);
  const dropped = await retryTransient(`job ${job.id}: end its run`, () => endJobRun(db, job, workerId, end));
  await deleteDroppedFiles(host.store, dropped);
}
