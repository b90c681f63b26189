// Named versions of an adapter (SnapshotTag). One name today, "best": while a
// job validates, the snapshot whose validation metric is the highest of that
// job so far. A job that degenerates late still leaves its best policy, and
// retention never deletes it. Every query is within the team.
import type { DbTx } from "./client.ts";

export const BEST_TAG = "best";

/** A validation a job just recorded: the snapshot version it measured and its metric. */
export interface ValidationResult {
  adapterId: string;
  version: number;
  /** The metric's name, e.g. "val/reward/mean" (higher is better). */
  metric: string;
  value: number;
  step: number;
}

/**
 * Moves the adapter's "best" tag to the validated snapshot when it beats the
 * job's best so far (a tag another job set, or none, is replaced: metrics of
 * different jobs do not compare). Returns whether the tag moved. Call it in the
 * transaction that stores the validation.
 */
export async function markBestSnapshot(
  tx: DbTx,
  teamId: string,
  jobId: string,
  result: ValidationResult,
): Promise<boolean> {
  if (!Number.isFinite(result.value)) return false;
  const snapshot = await tx.snapshot.findFirst({
    where: { teamId, adapterId: result.adapterId, version: result.version },
    select: { id: true },
  });
  if (!snapshot) return false;
  const current = await tx.snapshotTag.findFirst({
    where: { teamId, adapterId: result.adapterId, name: BEST_TAG },
    select: { jobId: true, metric: true, value: true },
  });
  // Ties keep the earlier version: it reached the figure with fewer updates.
  if (current?.jobId === jobId && current.metric === result.metric && current.value >= result.value)
    return false;
  const fields = {
    snapshotId: snapshot.id,
    jobId,
    metric: result.metric,
    value: result.value,
    step: result.step,
  };
  await tx.snapshotTag.upsert({
    where: { adapterId_name: { adapterId: result.adapterId, name: BEST_TAG } },
    create: { teamId, adapterId: result.adapterId, name: BEST_TAG, ...fields },
    update: fields,
  });
  return true;
}

export const bestSelect = {
  jobId: true,
  metric: true,
  value: true,
  step: true,
  updatedAt: true,
  snapshot: { select: { version: true, handle: true } },
} as const;

type BestRow = { jobId: string | null; metric: string; value: number; step: number; updatedAt: Date } & {
  snapshot: { version: number; handle: string };
};

/** A best tag as the API shows it. */
export const bestInfo = (row: BestRow) => ({
  version: row.snapshot.version,
  handle: row.snapshot.handle,
  jobId: row.jobId,
  metric: row.metric,
  value: row.value,
  step: row.step,
  markedAt: row.updatedAt,
});
export type BestSnapshot = ReturnType<typeof bestInfo>;

/** The adapter's best version, or null (none validated yet, or another team's adapter). */
export async function adapterBestSnapshot(
  db: DbTx,
  teamId: string,
  adapterId: string,
): Promise<BestSnapshot | null> {
  const row = await db.snapshotTag.findFirst({
    where: { teamId, adapterId, name: BEST_TAG },
    select: bestSelect,
  });
  return row ? bestInfo(row) : null;
}

/** The best version this job marked, while it is still the adapter's best; else null. */
export async function jobBestSnapshot(db: DbTx, teamId: string, jobId: string): Promise<BestSnapshot | null> {
  const row = await db.snapshotTag.findFirst({
    where: { teamId, jobId, name: BEST_TAG },
    select: bestSelect,
  });
  return row ? bestInfo(row) : null;
}

/** Before a job resumes at `step`: a best it marked at that step or later was measured on a lost line. */
export async function forgetLostBest(tx: DbTx, job: { teamId: string; id: string }, step: number) {
  await tx.snapshotTag.deleteMany({ where: { teamId: job.teamId, jobId: job.id, step: { gte: step } } });
}
