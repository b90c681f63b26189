import type { Db, DbTx } from "./client.ts";
import { NotFoundError, QuotaExceededError, UnknownTeamError } from "./errors.ts";
import type { JobKind, Prisma } from "./generated/prisma/client.ts";
import { tasks } from "./queue-names.ts";
import { jobSelect } from "./selects.ts";

export interface CreateJobInput {
  adapterId: string;
  environmentId?: string;
  kind: JobKind;
  config: Prisma.InputJsonValue;
}

/** What a team's quota bounds of a job (protocol's jobSize), with the field that sets each. */
export interface JobSize {
  steps: { value: number; field: string };
  sequencesPerStep: { value: number; field: string };
}

export interface EnqueueJobInput extends CreateJobInput {
  size: JobSize;
  /** A snapshot the job samples (EVAL): it must be the team's, over the adapter's base model. */
  handle?: string;
}

/** A run is retried this often (a worker that dies mid-run hands it to another). */
const JOB_MAX_ATTEMPTS = 25;

/** Queues a job's run for any worker; its queue key is the job's, so a job has one queued run at most. */
export async function queueJobRun(db: DbTx, jobId: string): Promise<void> {
  await db.$executeRaw`SELECT graphile_worker.add_job(${tasks.job}, json_build_object('jobId', ${jobId}::text),
    max_attempts => ${JOB_MAX_ATTEMPTS}::int, job_key => ${`job:${jobId}`}::text)`;
}

export function createJob(db: DbTx, teamId: string, input: CreateJobInput) {
  return db.job.create({ data: { ...input, teamId }, select: jobSelect });
}

type QuotaRow = { maxConcurrentJobs: number; maxJobSteps: number; maxSequencesPerStep: number };

function checkJobSize(size: JobSize, team: QuotaRow): void {
  for (const [dimension, limit, quota] of [
    [size.steps, team.maxJobSteps, "maxJobSteps"],
    [size.sequencesPerStep, team.maxSequencesPerStep, "maxSequencesPerStep"],
  ] as const) {
    if (dimension.value > limit)
      throw new RangeError(
        `${dimension.field}: the job would take ${dimension.value}, more than the team's ${quota} (${limit})`,
      );
  }
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
export function enqueueJob(db: Db, teamId: string, input: EnqueueJobInput) {
  const { size, handle, ...job } = input;
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`jobs:${teamId}`}))`;
    const team = await tx.team.findUnique({
      where: { id: teamId },
      select: { maxConcurrentJobs: true, maxJobSteps: true, maxSequencesPerStep: true },
    });
    if (!team) throw new UnknownTeamError(`team ${teamId} no longer exists`);
    const adapter = await checkJobObjects(tx, teamId, input);
    checkJobSize(size, team);
    const active = await tx.job.count({ where: { teamId, status: { in: ["QUEUED", "RUNNING"] } } });
    if (active >= team.maxConcurrentJobs)
      throw new QuotaExceededError(
        `quota exceeded: the team has ${active} queued or running jobs (maxConcurrentJobs is ${team.maxConcurrentJobs})`,
      );
    const busy = await tx.job.findFirst({
      where: { adapterId: adapter.id, status: { in: ["QUEUED", "RUNNING"] } },
      select: { id: true },
    });
    if (busy) throw new RangeError(`adapter ${adapter.id} is already being trained by job ${busy.id}`);
    const created = await createJob(tx, teamId, job);
    await queueJobRun(tx, created.id);
    return created;
  });
}

/** The job's adapter, environment and snapshot, each resolved within the team (404 otherwise). */
async function checkJobObjects(tx: DbTx, teamId: string, input: EnqueueJobInput) {
  const adapter = await tx.adapter.findFirst({
    where: { id: input.adapterId, teamId },
    select: { id: true, baseModelId: true },
  });
  if (!adapter) throw new NotFoundError(`adapter ${input.adapterId} not found`);
  if (input.environmentId) {
    const env = await tx.environment.findFirst({
      where: { id: input.environmentId, teamId },
      select: { id: true },
    });
    if (!env) throw new NotFoundError(`environment ${input.environmentId} not found`);
  }
  if (input.handle) await checkJobPolicy(tx, teamId, adapter, input.handle);
  return adapter;
}

/** A job's snapshot, resolved within the team; another team's answers like an unknown one. */
async function checkJobPolicy(
  tx: DbTx,
  teamId: string,
  adapter: { id: string; baseModelId: string },
  handle: string,
): Promise<void> {
  const snapshot = await tx.snapshot.findFirst({
    where: { teamId, handle },
    select: { adapter: { select: { baseModelId: true } } },
  });
  if (!snapshot) throw new NotFoundError(`snapshot ${handle} not found`);
  if (snapshot.adapter.baseModelId !== adapter.baseModelId)
    throw new RangeError(`config.handle: ${handle} samples another base model than adapter ${adapter.id}`);
}
