// A worker's side of one run of a server-side job: claiming it, watching for
// its cancellation, handing it back when the worker drains, and releasing its
// adapter when it ends. A job whose worker died is picked up by another worker
// (the queue releases the lost worker's lock) and resumes from its checkpoint.
import type { Retention } from "@opentinker/protocol";
import type { Db, DbTx } from "./client.ts";
import type { JobStatus } from "./generated/prisma/enums.ts";
import { finishJob, startJob } from "./job-steps.ts";

/** What a worker runs a job from: its kind, config and environment. */
function loadJob(db: DbTx, jobId: string) {
  return db.job.findUnique({ where: { id: jobId }, include: { environment: true } });
}

export type ClaimedJob = NonNullable<Awaited<ReturnType<typeof loadJob>>>;

/**
 * Claims a queued (or resumed) job for this worker: marks it running and places
 * its adapter here. Null when there is nothing to run: the job is gone or over,
 * or its cancel came before it started (it is then ended as cancelled).
 */
export async function claimJobRun(db: Db, jobId: string, workerId: string): Promise<ClaimedJob | null> {
  const job = await loadJob(db, jobId);
  if (!job || !["QUEUED", "RUNNING"].includes(job.status)) return null;
  if (job.cancelRequestedAt) {
    await finishJob(db, job, "CANCELLED");
    return null;
  }
  await startJob(db, job, workerId);
  // The job holds its adapter's training state here, rebuilt from the checkpoint.
  await db.adapter.updateMany({ where: { id: job.adapterId, teamId: job.teamId }, data: { workerId } });
  return job;
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
  end: { status: JobStatus; error: string | null; retention: Retention } | null,
): Promise<string[]> {
  return db.$transaction(async (tx) => {
    let doomed: string[] = [];
    if (end) {
      await finishJob(tx, job, end.status, end.error);
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
