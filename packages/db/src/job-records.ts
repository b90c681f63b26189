// What a job recorded, as the API reads it: its metrics and its stored
// trajectories. Null when the team has no such job (another team's answers the same).
import type { DbTx } from "./client.ts";
import { listMetrics } from "./metrics.ts";
import { listTrajectories } from "./trajectories.ts";

/** A job's metrics from a step on, or null. */
export async function listJobMetrics(db: DbTx, teamId: string, jobId: string, sinceStep: number) {
  const job = await db.job.findFirst({ where: { id: jobId, teamId }, select: { id: true } });
  return job ? listMetrics(db, teamId, jobId, sinceStep) : null;
}

/** A job's trajectories of one step, with the base model whose tokens they hold; or null. */
export async function listJobTrajectories(db: DbTx, teamId: string, jobId: string, step: number) {
  const job = await db.job.findFirst({
    where: { id: jobId, teamId },
    select: { adapter: { select: { baseModel: { select: { id: true, path: true } } } } },
  });
  if (!job) return null;
  return { baseModel: job.adapter.baseModel, trajectories: await listTrajectories(db, teamId, jobId, step) };
}
