import { defaultJobName, VISION_ENVIRONMENTS, visionModelRequired } from "@opentinker/protocol";
import type { Db, DbTx } from "./client.ts";
import { NotFoundError, QuotaExceededError, UnknownTeamError } from "./errors.ts";
import { type JobKind, Prisma } from "./generated/prisma/client.ts";
import { METRICS_CHANNEL } from "./queue-names.ts";
import { addJobSql, queueTasks } from "./queue-tasks.ts";
import { jobSelect } from "./selects.ts";
import { lockTeam } from "./team-lock.ts";

export interface CreateJobInput {
  /** Omitted: `defaultJobName` of its environment and adapter. */
  name?: string;
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
  /**
   * A snapshot the job's config names (EVAL: the one it samples; RL: its KL's
   * reference) and the field that names it: the team's, over the adapter's base model.
   */
  snapshot?: { handle: string; field: string };
}

/**
 * Queues a job's run for any worker (queueTasks.job: retried, one queued run per
 * job), not before `delayMs` from now.
 */
export async function queueJobRun(db: DbTx, jobId: string, delayMs = 0): Promise<void> {
  const { id, key, maxAttempts } = queueTasks.job;
  const payload = Prisma.sql`json_build_object('jobId', ${jobId}::text)`;
  await db.$executeRaw`SELECT ${addJobSql({ task: id, payload, maxAttempts, jobKey: key(jobId), delayMs })}`;
}

/** Creates a job row (named by its creator, or after its environment and adapter). */
export async function createJob(db: DbTx, teamId: string, input: CreateJobInput) {
  const name = input.name ?? (await defaultNameOf(db, teamId, input));
  return db.job.create({ data: { ...input, name, teamId }, select: jobSelect });
}

/** The name of a job nobody named, from its adapter and environment as the team has them. */
async function defaultNameOf(db: DbTx, teamId: string, input: CreateJobInput): Promise<string> {
  const adapter = await db.adapter.findFirst({
    where: { id: input.adapterId, teamId },
    select: { name: true },
  });
  if (!adapter) throw new NotFoundError(`adapter ${input.adapterId} not found`);
  const environment = input.environmentId
    ? await db.environment.findFirst({ where: { id: input.environmentId, teamId }, select: { name: true } })
    : null;
  return defaultJobName({
    kind: input.kind,
    environmentName: environment?.name ?? null,
    adapterName: adapter.name,
  });
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

/** Asks a job of this team to stop and returns it as it is then; null when the team has no such job. */
export async function cancelJob(db: DbTx, teamId: string, jobId: string) {
  const job = await getJob(db, teamId, jobId);
  if (!job) return null;
  await requestJobCancel(db, teamId, jobId);
  return (await getJob(db, teamId, jobId)) ?? job;
}

/**
 * Creates a job and queues it for a worker, in one transaction: the team's
 * concurrent-job quota holds exactly, and an adapter runs one job at a time.
 */
export function enqueueJob(db: Db, teamId: string, input: EnqueueJobInput) {
  const { size, snapshot: _, ...job } = input;
  return db.$transaction(async (tx) => {
    await lockTeam(tx, "jobs", teamId);
    const team = await tx.team.findUnique({
      where: { id: teamId },
      select: { maxConcurrentJobs: true, maxJobSteps: true, maxSequencesPerStep: true },
    });
    if (!team) throw new UnknownTeamError(`team ${teamId} no longer exists`);
    const adapter = await checkJobObjects(tx, teamId, input);
    checkJobSize(size, team);
    await checkJobCanRun(tx, teamId, team, adapter.id);
    const created = await createJob(tx, teamId, job);
    await queueJobRun(tx, created.id);
    return created;
  });
}

/**
 * A job may join the queue when the team is within its concurrent-job quota and
 * no other job trains its adapter. Call under the team's "jobs" lock.
 */
async function checkJobCanRun(
  tx: DbTx,
  teamId: string,
  team: Pick<QuotaRow, "maxConcurrentJobs">,
  adapterId: string,
): Promise<void> {
  const active = await tx.job.count({ where: { teamId, status: { in: ["QUEUED", "RUNNING"] } } });
  if (active >= team.maxConcurrentJobs)
    throw new QuotaExceededError(
      `quota exceeded: the team has ${active} queued or running jobs (maxConcurrentJobs is ${team.maxConcurrentJobs})`,
    );
  const busy = await tx.job.findFirst({
    where: { adapterId, status: { in: ["QUEUED", "RUNNING"] } },
    select: { id: true },
  });
  if (busy) throw new RangeError(`adapter ${adapterId} is already being trained by job ${busy.id}`);
}

/**
 * Resumes a FAILED or CANCELLED job of this team from its last checkpoint (issue
 * 44): back to the queue as if its worker had died, within the team's quota.
 * Null when the team has no such job (another team's answers the same).
 */
export function resumeJob(db: Db, teamId: string, jobId: string) {
  return db.$transaction(async (tx) => {
    await lockTeam(tx, "jobs", teamId);
    const job = await tx.job.findFirst({
      where: { id: jobId, teamId },
      select: { status: true, adapterId: true, team: { select: { maxConcurrentJobs: true } } },
    });
    if (!job) return null;
    if (job.status !== "FAILED" && job.status !== "CANCELLED")
      throw new RangeError(
        `jobId: job ${jobId} is ${job.status.toLowerCase()}; only a failed or cancelled job can be resumed`,
      );
    await checkJobCanRun(tx, teamId, job.team, job.adapterId);
    await tx.job.update({
      where: { id: jobId },
      data: { status: "QUEUED", error: null, errorClass: null, cancelRequestedAt: null, finishedAt: null },
    });
    await queueJobRun(tx, jobId);
    const notice = JSON.stringify({ teamId, jobId, status: "QUEUED" });
    await tx.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${notice})`;
    return getJob(tx, teamId, jobId);
  });
}

/**
 * The job's adapter, environment and snapshot, each resolved within the team
 * (404 otherwise); an environment whose prompts hold a picture needs an
 * adapter over a vision-language base model (400 otherwise).
 */
async function checkJobObjects(tx: DbTx, teamId: string, input: EnqueueJobInput) {
  const adapter = await tx.adapter.findFirst({
    where: { id: input.adapterId, teamId },
    select: { id: true, baseModelId: true, baseModel: { select: { name: true, visionLanguage: true } } },
  });
  if (!adapter) throw new NotFoundError(`adapter ${input.adapterId} not found`);
  if (input.environmentId) {
    const env = await tx.environment.findFirst({
      where: { id: input.environmentId, teamId },
      select: { id: true, kind: true, builtin: true },
    });
    if (!env) throw new NotFoundError(`environment ${input.environmentId} not found`);
    const pictures = env.kind === "BUILTIN" && VISION_ENVIRONMENTS.some((kind) => kind === env.builtin);
    if (pictures && !adapter.baseModel.visionLanguage)
      throw new RangeError(
        `adapterId: ${visionModelRequired(env.builtin ?? "", adapter.baseModel.name)} (adapter ${adapter.id})`,
      );
  }
  if (input.snapshot) await checkJobSnapshot(tx, teamId, adapter, input.snapshot);
  return adapter;
}

/** A job's snapshot, resolved within the team; another team's answers like an unknown one. */
async function checkJobSnapshot(
  tx: DbTx,
  teamId: string,
  adapter: { id: string; baseModelId: string },
  { handle, field }: { handle: string; field: string },
): Promise<void> {
  const snapshot = await tx.snapshot.findFirst({
    where: { teamId, handle },
    select: { adapter: { select: { baseModelId: true } } },
  });
  if (!snapshot) throw new NotFoundError(`snapshot ${handle} not found`);
  if (snapshot.adapter.baseModelId !== adapter.baseModelId)
    throw new RangeError(
      `${field}: ${handle} is a snapshot over another base model than adapter ${adapter.id}'s`,
    );
}
