// What a server-side job stores per step, atomically: its trajectories, its
// metrics and its progress; then the web processes are told (NOTIFY) so that
// the dashboard's live charts update.
import type { Db, DbTx } from "./client.ts";
import type { JobErrorClass, JobStatus } from "./generated/prisma/enums.ts";
import { queueJobRun } from "./jobs.ts";
import { recordMetrics } from "./metrics.ts";
import { METRICS_CHANNEL } from "./queue-names.ts";
import { forgetLostBest, markBestSnapshot, type ValidationResult } from "./snapshot-tags.ts";
import { supersedeSnapshots } from "./snapshots.ts";
import { insertTrajectories, type TrajectoryInput } from "./trajectories.ts";

export interface MetricsNotice {
  teamId: string;
  jobId: string;
  step: number;
}

/** `validated`: the step's validation, which moves the adapter's best version when it beats the job's best so far. */
export function recordJobStep(
  db: Db,
  job: { teamId: string; id: string },
  step: number,
  values: Record<string, number>,
  trajectories: TrajectoryInput[],
  validated?: ValidationResult,
): Promise<void> {
  const finite = Object.fromEntries(Object.entries(values).filter(([, v]) => Number.isFinite(v)));
  const notice: MetricsNotice = { teamId: job.teamId, jobId: job.id, step };
  return db.$transaction(async (tx) => {
    // First, so the job row is locked and a step stored by a try whose answer
    // was lost (the commit went through, the connection did not) is not stored twice.
    const moved = await tx.job.updateMany({ where: { id: job.id, step }, data: { step: step + 1 } });
    if (moved.count === 0) return stepAlreadyStored(tx, job.id, step);
    await insertTrajectories(tx, job.teamId, job.id, trajectories);
    await recordMetrics(tx, job.teamId, job.id, step, finite);
    if (validated) await markBestSnapshot(tx, job.teamId, job.id, validated);
    await tx.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${JSON.stringify(notice)})`;
  });
}

/** A step whose progress is already past it was stored before; any other is a step out of order (a bug). */
async function stepAlreadyStored(tx: DbTx, jobId: string, step: number): Promise<void> {
  const row = await tx.job.findUnique({ where: { id: jobId }, select: { step: true } });
  if (row && row.step > step) return;
  throw new Error(`job ${jobId}: step ${step} is not the next step to store (the job is at ${row?.step})`);
}

/**
 * Before a job resumes from its checkpoint at `step`: forgets what later steps
 * stored, since they run again (so nothing is duplicated and nothing lost), and
 * marks the snapshots they published superseded (published after the
 * checkpoint was saved: no surviving training state produced them).
 */
export async function rewindJob(
  db: Db,
  job: { teamId: string; id: string },
  step: number,
  checkpointName: string,
): Promise<void> {
  await db.$transaction(async (tx) => {
    await tx.trajectory.deleteMany({ where: { jobId: job.id, step: { gte: step } } });
    await tx.metric.deleteMany({ where: { jobId: job.id, step: { gte: step } } });
    await forgetLostBest(tx, job, step);
    await tx.job.update({ where: { id: job.id }, data: { step } });
    const checkpoint = await tx.checkpoint.findFirst({
      where: { teamId: job.teamId, jobId: job.id, name: checkpointName },
      select: { createdAt: true },
    });
    if (checkpoint) await supersedeSnapshots(tx, job, checkpoint.createdAt);
  });
}

/** Marks a job running on a worker and announces it, so its page need not poll while it waits. */
export async function startJob(
  db: Db,
  job: { teamId: string; id: string; startedAt: Date | null },
  workerId: string,
): Promise<void> {
  const notice = JSON.stringify({ teamId: job.teamId, jobId: job.id, status: "RUNNING" });
  await db.$transaction([
    db.job.update({
      where: { id: job.id },
      data: { status: "RUNNING", workerId, startedAt: job.startedAt ?? new Date(), waitingFor: null },
    }),
    db.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${notice})`,
  ]);
}

/** Ends a job (a failure with its error's class); its queued work is cancelled with it. */
export async function finishJob(
  db: DbTx,
  job: { teamId: string; id: string },
  status: JobStatus,
  error: string | null = null,
  errorClass: JobErrorClass | null = null,
): Promise<void> {
  await db.job.update({ where: { id: job.id }, data: { status, error, errorClass, finishedAt: new Date() } });
  const notice = JSON.stringify({ teamId: job.teamId, jobId: job.id, status });
  await db.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${notice})`;
}

/** A job its worker stopped before the end (draining): back to the queue, to resume from its last checkpoint. */
export async function requeueJob(db: Db, job: { teamId: string; id: string }): Promise<void> {
  const notice = JSON.stringify({ teamId: job.teamId, jobId: job.id, status: "QUEUED" });
  await db.$transaction(async (tx) => {
    await tx.job.update({ where: { id: job.id }, data: { status: "QUEUED", workerId: null } });
    await queueJobRun(tx, job.id);
    await tx.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${notice})`;
  });
}
