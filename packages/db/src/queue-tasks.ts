// Every queue task kind, declared once: its id, its payload schema and its retry
// policy. The enqueuers' SQL (requests, job runs) and the
// worker's task registration both read these, so they cannot disagree.
import { z } from "zod";
import { Prisma } from "./generated/prisma/client.ts";

export const ZRequestTaskPayload = z.object({ requestId: z.string().min(1) });
export const ZJobTaskPayload = z.object({ jobId: z.string().min(1) });

const TRAIN_PREFIX = "train:";
const SAMPLE_PREFIX = "sample:";

/**
 * No task has a time limit of its own, on purpose: cutting a training call short
 * while its computation goes on would let the adapter's next call overtake it.
 * A run holds the queue's lock until it ends, a lost worker's locks are released
 * by the others (placement), and a job stops within its step on cancel or drain.
 */
export const queueTasks = {
  /**
   * A training call, run by the worker holding the adapter, in the adapter's
   * own queue so its calls run one at a time in seq order. Never retried: a
   * second run would apply it twice.
   */
  train: {
    id: (workerId: string) => `${TRAIN_PREFIX}${workerId}`,
    /** SQL builds the id from the worker column too. */
    idPrefix: TRAIN_PREFIX,
    queue: (adapterId: string) => `adapter:${adapterId}`,
    payload: ZRequestTaskPayload,
    maxAttempts: 1,
  },
  /** A sampling call, on any worker serving the base model; idempotent, so a lost worker's is run again. */
  sample: {
    id: (baseModelId: string) => `${SAMPLE_PREFIX}${baseModelId}`,
    payload: ZRequestTaskPayload,
    maxAttempts: 3,
  },
  /**
   * A server-side job's run, on any worker; retried often, since a worker that
   * dies mid-run hands it to another, which resumes it from its checkpoint. Its
   * key is the job's, so a job has one queued run at most.
   */
  job: {
    id: "job",
    key: (jobId: string) => `job:${jobId}`,
    payload: ZJobTaskPayload,
    maxAttempts: 25,
  },
} as const;

/** Queue task names: what a worker subscribes to. */
export const tasks = {
  train: queueTasks.train.id,
  sample: queueTasks.sample.id,
  job: queueTasks.job.id,
} as const;

export interface AddJob {
  /** The task id, or SQL that builds it. */
  task: string | Prisma.Sql;
  /** The payload, as SQL (usually a json_build_object over the statement's rows). */
  payload: Prisma.Sql;
  maxAttempts: number;
  queue?: string | null;
  jobKey: string | Prisma.Sql;
  /** Not before this many milliseconds from now (a job resuming after a fault backs off). */
  delayMs?: number;
}

/** The graphile-worker call that queues a task's run, inside the caller's statement. */
export function addJobSql(job: AddJob): Prisma.Sql {
  return Prisma.sql`graphile_worker.add_job(${job.task}::text, ${job.payload},
    queue_name => ${job.queue ?? null}::text, max_attempts => ${job.maxAttempts}::int, job_key => ${job.jobKey}::text,
    run_at => now() + make_interval(secs => ${(job.delayMs ?? 0) / 1000}::float8))`;
}
