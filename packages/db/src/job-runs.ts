// A worker's side of one run of a server-side job: claiming it, watching for
// its cancellation, handing it back when the worker drains, and releasing its
// adapter when it ends. A job whose worker died is picked up by another worker
// (the queue releases the lost worker's lock) and resumes from its checkpoint.
import type { Retention } from "@opentinker/protocol";
import type { Db, DbTx } from "./client.ts";
import type { JobErrorClass, JobStatus } from "./generated/prisma/enums.ts";
import { finishJob, startJob } from "./job-steps.ts";
import { queueJobRun } from "./jobs.ts";
import { AdapterTooLargeError, placeJobAdapter } from "./placement.ts";
import { METRICS_CHANNEL } from "./queue-names.ts";
import { makeRoom } from "./requests.ts";

/** What a worker runs a job from: its kind, config and environment. */
function loadJob(db: DbTx, jobId: string) {
  return db.job.findUnique({ where: { id: jobId }, include: { environment: true } });
}

export type ClaimedJob = NonNullable<Awaited<ReturnType<typeof loadJob>>>;

/** How long a job that found no slot waits before its run is tried again (ms). */
export const JOB_SLOT_RETRY_MS = 2_000;

/**
 * Claims a queued (or resumed) job for this worker: places its adapter here
 * within the slot-sharing rule (placement.ts) and marks it running. Null when
 * there is nothing to run now: the job is gone or over, its cancel came before
 * it started (it is then ended as cancelled), or no slot is free for it yet: it
 * stays QUEUED, its run is queued again for JOB_SLOT_RETRY_MS later (a new run,
 * so none of its attempts is spent) and an idle adapter is asked to leave where
 * that frees a slot for it.
 */
export async function claimJobRun(db: Db, jobId: string, workerId: string): Promise<ClaimedJob | null> {
  const job = await loadJob(db, jobId);
  if (!job || !["QUEUED", "RUNNING"].includes(job.status)) return null;
  if (job.cancelRequestedAt) {
    await finishJob(db, job, "CANCELLED");
    return null;
  }
  // The job holds its adapter's training state here, rebuilt from the checkpoint.
  let placement: Awaited<ReturnType<typeof placeOrWait>>;
  try {
    placement = await placeOrWait(db, job, workerId);
  } catch (error) {
    // No worker could ever hold it: the job's own settings are the fault, so it fails saying why.
    if (!(error instanceof AdapterTooLargeError)) throw error;
    await finishJob(db, job, "FAILED", error.message, "USER");
    return null;
  }
  if (!placement.placed) {
    if (placement.room)
      await makeRoom(db, job.adapterId, placement.room).catch((cause: unknown) =>
        console.error(`placement: could not make room for job ${job.id}: ${(cause as Error).message}`),
      );
    return null;
  }
  await startJob(db, job, workerId);
  return job;
}

/** Places the job's adapter on the worker, or queues the job's run again with the reason it waits. */
function placeOrWait(db: Db, job: Parameters<typeof placeJobAdapter>[1] & { id: string }, workerId: string) {
  return db.$transaction(async (tx) => {
    const placed = await placeJobAdapter(tx, job, workerId);
    if (placed.placed) return placed;
    await queueJobRun(tx, job.id, JOB_SLOT_RETRY_MS);
    // Written only when it changed: a waiting job is claimed every few seconds.
    await tx.$executeRaw`UPDATE "Job" SET "waitingFor" = ${placed.reason}
      WHERE id = ${job.id} AND "waitingFor" IS DISTINCT FROM ${placed.reason}`;
    return placed;
  });
}

/** Whether a cancel was asked for the team's job. */
export async function jobCancelRequested(db: DbTx, teamId: string, jobId: string): Promise<boolean> {
  const row = await db.job.findFirst({ where: { id: jobId, teamId }, select: { cancelRequestedAt: true } });
  return Boolean(row?.cancelRequestedAt);
}

/** The step the team's job has stored progress up to. */
export async function jobProgress(db: DbTx, teamId: string, jobId: string): Promise<number> {
  const row = await db.job.findFirstOrThrow({ where: { id: jobId, teamId }, select: { step: true } });
  return row.step;
}

/** The job's run ended on this worker: its adapter is no longer held here. */
export async function releaseJobAdapter(
  db: DbTx,
  teamId: string,
  job: { adapterId: string; workerId: string },
): Promise<void> {
  await db.adapter.updateMany({
    where: { id: job.adapterId, teamId, workerId: job.workerId },
    data: { workerId: null },
  });
}

/** How a job's run ended: its status, and for a failure the error and its class. */
export interface JobEnd {
  status: JobStatus;
  error: string | null;
  errorClass?: JobErrorClass | null;
  retention: Retention;
}

/**
 * A transient fault stopped the job's run on this worker (issue 44): the job
 * goes back to the queue, counted and with the fault's message, to resume from
 * its last checkpoint on any worker after `delayMs`, and its adapter is let go
 * here, all in one transaction. False when the job is no longer this worker's
 * to give back and not waiting either (it ended, or another worker has it).
 */
export async function requeueAfterFault(
  db: Db,
  job: { teamId: string; id: string; adapterId: string },
  workerId: string,
  fault: { message: string; delayMs: number },
): Promise<boolean> {
  const notice = JSON.stringify({ teamId: job.teamId, jobId: job.id, status: "QUEUED" });
  return db.$transaction(async (tx) => {
    const moved = await tx.$executeRaw`
      UPDATE "Job" SET status = 'QUEUED', "workerId" = NULL, faults = faults + 1, "lastFault" = ${fault.message}
      WHERE id = ${job.id} AND "teamId" = ${job.teamId} AND status = 'RUNNING' AND "workerId" = ${workerId}`;
    await releaseJobAdapter(tx, job.teamId, { adapterId: job.adapterId, workerId });
    // Released meanwhile as a lost worker's (back to QUEUED): its run, which this
    // worker's queue job ends with, is queued again all the same (one per job key).
    if (
      moved === 0 &&
      (await tx.job.findUnique({ where: { id: job.id }, select: { status: true } }))?.status !== "QUEUED"
    )
      return false;
    await queueJobRun(tx, job.id, fault.delayMs);
    await tx.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${notice})`;
    return true;
  });
}

/**
 * The job's run on this worker is over: its end (when it ended rather than went
 * back to the queue), the rows its retention drops and the release of its
 * adapter commit together, so whoever sees the job finished finds its adapter
 * free and only the versions it keeps. Returns the store paths of the dropped
 * rows, for the caller to delete the files after them.
 */
export async function endJobRun(
  db: Db,
  job: { teamId: string; id: string; adapterId: string },
  workerId: string,
  end: JobEnd | null,
): Promise<string[]> {
  return db.$transaction(async (tx) => {
    let doomed: string[] = [];
    if (end) {
      await finishJob(tx, job, end.status, end.error, end.errorClass);
      if (end.retention === "keep-final") doomed = await dropIntermediateObjects(tx, job.teamId, job.id);
    }
    await releaseJobAdapter(tx, job.teamId, { adapterId: job.adapterId, workerId });
    return doomed;
  });
}

/**
 * "keep-final" retention of an ended job: deletes the rows of its intermediate
 * snapshots and checkpoints (the final ones, and any named version such as the
 * best, stay loadable) and returns their store paths, for the caller to delete
 * the files after the rows.
 */
export async function dropIntermediateObjects(db: DbTx, teamId: string, jobId: string): Promise<string[]> {
  const select = { id: true, path: true } as const;
  const snapshots = await db.snapshot.findMany({
    where: { teamId, jobId },
    orderBy: { version: "desc" },
    select: { ...select, _count: { select: { tags: true } } },
  });
  const checkpoints = await db.checkpoint.findMany({
    where: { teamId, jobId },
    orderBy: [{ step: "desc" }, { createdAt: "desc" }],
    select,
  });
  const doomedSnapshots = snapshots.slice(1).filter((s) => s._count.tags === 0);
  const doomedCheckpoints = checkpoints.slice(1);
  await db.snapshot.deleteMany({ where: { id: { in: doomedSnapshots.map((s) => s.id) } } });
  await db.checkpoint.deleteMany({ where: { id: { in: doomedCheckpoints.map((c) => c.id) } } });
  return [...doomedSnapshots, ...doomedCheckpoints].map((o) => o.path);
}
