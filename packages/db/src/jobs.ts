import type { Db, DbTx } from "./client.ts";
import type { JobKind, Prisma } from "./generated/prisma/client.ts";
import { tasks } from "./queue-names.ts";
import { QuotaExceededError } from "./requests.ts";
import { jobSelect } from "./selects.ts";
import { NotFoundError } from "./snapshots.ts";

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

/**
 * Creates a job and queues it for a worker, in one transaction: the team's
 * concurrent-job quota holds exactly, and an adapter runs one job at a time.
 */
export function enqueueJob(db: Db, teamId: string, input: CreateJobInput) {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`jobs:${teamId}`}))`;
    const team = await tx.team.findUnique({ where: { id: teamId }, select: { maxConcurrentJobs: true } });
    if (!team) throw new NotFoundError(`team ${teamId} not found`);
    const active = await tx.job.count({ where: { teamId, status: { in: ["QUEUED", "RUNNING"] } } });
    if (active >= team.maxConcurrentJobs)
      throw new QuotaExceededError(
        `quota exceeded: the team has ${active} queued or running jobs (maxConcurrentJobs is ${team.maxConcurrentJobs})`,
      );
    const adapter = await tx.adapter.findFirst({
      where: { id: input.adapterId, teamId },
      select: { id: true },
    });
    if (!adapter) throw new NotFoundError(`adapter ${input.adapterId} not found`);
    if (input.environmentId) {
      const env = await tx.environment.findFirst({
        where: { id: input.environmentId, teamId },
        select: { id: true },
      });
      if (!env) throw new NotFoundError(`environment ${input.environmentId} not found`);
    }
    const busy = await tx.job.findFirst({
      where: { adapterId: adapter.id, status: { in: ["QUEUED", "RUNNING"] } },
      select: { id: true },
    });
    if (busy) throw new RangeError(`adapter ${adapter.id} is already being trained by job ${busy.id}`);
    const job = await createJob(tx, teamId, input);
    await tx.$executeRaw`SELECT graphile_worker.add_job(${tasks.job}, json_build_object('jobId', ${job.id}::text),
      max_attempts => 25, job_key => ${`job:${job.id}`}::text)`;
    return job;
  });
}
