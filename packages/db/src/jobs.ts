import type { DbTx } from "./client.ts";
import type { JobKind, Prisma } from "./generated/prisma/client.ts";
import { jobSelect } from "./selects.ts";

export interface CreateJobInput {
  adapterId: string;
  environmentId?: string;
  kind: JobKind;
  config: Prisma.InputJsonValue;
}

export function createJob(db: DbTx, teamId: string, input: CreateJobInput) {
  return db.job.create({ data: { ...input, teamId }, select: jobSelect });
}

export function getJob(db: DbTx, teamId: string, jobId: string) {
  return db.job.findFirst({ where: { id: jobId, teamId }, select: jobSelect });
}

export function listJobs(db: DbTx, teamId: string) {
  return db.job.findMany({ where: { teamId }, select: jobSelect, orderBy: { createdAt: "desc" } });
}

/** Asks a queued or running job to stop; false when the team has no such job. */
export async function requestJobCancel(db: DbTx, teamId: string, jobId: string): Promise<boolean> {
  const { count } = await db.job.updateMany({
    where: { id: jobId, teamId, status: { in: ["QUEUED", "RUNNING"] }, cancelRequestedAt: null },
    data: { cancelRequestedAt: new Date() },
  });
  return count === 1;
}
