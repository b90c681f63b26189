// API futures (C2): every call is a durable Request row, enqueued in the same
// transaction on graphile-worker's Postgres queue. Training calls of one adapter
// share a queue (so they run one at a time, in seq order) on the worker holding
// the adapter; sampling calls go to any worker with the base model.
import type { Db, DbTx } from "./client.ts";
import type { Prisma, RequestKind } from "./generated/prisma/client.ts";
import { placeAdapter } from "./placement.ts";
import { REQUEST_CHANNEL, tasks } from "./queue-names.ts";
import { NotFoundError } from "./snapshots.ts";

export class QuotaExceededError extends Error {
  override name = "QuotaExceededError";
}

export const TRAINING_KINDS = [
  "FORWARD",
  "FORWARD_BACKWARD",
  "OPTIM_STEP",
  "SAVE_WEIGHTS_FOR_SAMPLER",
  "SAVE_STATE",
  "LOAD_STATE",
] as const satisfies readonly RequestKind[];
export type TrainingRequestKind = (typeof TRAINING_KINDS)[number];

export interface EnqueuedRequest {
  requestId: string;
  seq: number | null;
}

async function checkQueuedQuota(tx: DbTx, teamId: string): Promise<void> {
  const rows = await tx.$queryRaw<{ max: number; queued: bigint }[]>`
    SELECT t."maxQueuedRequests" AS max,
           (SELECT count(*) FROM "Request" r WHERE r."teamId" = t.id AND r.status IN ('QUEUED', 'RUNNING')) AS queued
    FROM "Team" t WHERE t.id = ${teamId}`;
  const row = rows[0];
  if (!row) throw new NotFoundError(`team ${teamId} not found`);
  if (Number(row.queued) >= row.max)
    throw new QuotaExceededError(
      `quota exceeded: the team has ${row.queued} queued requests (maxQueuedRequests is ${row.max})`,
    );
}

async function addQueueJob(
  tx: DbTx,
  task: string,
  requestId: string,
  options: { queue?: string; maxAttempts: number },
): Promise<void> {
  await tx.$executeRaw`SELECT graphile_worker.add_job(
    ${task}, json_build_object('requestId', ${requestId}::text),
    queue_name => ${options.queue ?? null}::text, max_attempts => ${options.maxAttempts}::int,
    job_key => ${requestId}::text)`;
}

/**
 * Enqueues a training call on an adapter of this team: allocates its sequence
 * number, places the adapter on a worker if it has none, and queues the work.
 */
export function enqueueTrainingRequest(
  db: Db,
  teamId: string,
  input: { adapterId: string; kind: TrainingRequestKind; payload: Prisma.InputJsonValue },
): Promise<EnqueuedRequest> {
  return db.$transaction(async (tx) => {
    await checkQueuedQuota(tx, teamId);
    // The row lock taken here orders concurrent calls on the same adapter.
    const [adapter] = await tx.$queryRaw<{ requestSeq: number }[]>`
      UPDATE "Adapter" SET "requestSeq" = "requestSeq" + 1
      WHERE id = ${input.adapterId} AND "teamId" = ${teamId} AND status = 'ACTIVE'
      RETURNING "requestSeq"`;
    if (!adapter) throw new NotFoundError(`adapter ${input.adapterId} not found`);
    const workerId = await placeAdapter(tx, input.adapterId);
    const request = await tx.request.create({
      data: {
        teamId,
        adapterId: input.adapterId,
        seq: adapter.requestSeq,
        kind: input.kind,
        input: input.payload,
      },
      select: { id: true, seq: true },
    });
    await addQueueJob(tx, tasks.train(workerId), request.id, {
      queue: `adapter:${input.adapterId}`,
      maxAttempts: 1,
    });
    return { requestId: request.id, seq: request.seq };
  });
}

/** Enqueues a sampling call (sample or computeLogprobs) on a base model's workers. */
export function enqueueSamplingRequest(
  db: Db,
  teamId: string,
  input: {
    kind: "SAMPLE" | "COMPUTE_LOGPROBS";
    baseModelId: string;
    adapterId: string | null;
    payload: Prisma.InputJsonValue;
  },
): Promise<EnqueuedRequest> {
  return db.$transaction(async (tx) => {
    await checkQueuedQuota(tx, teamId);
    const request = await tx.request.create({
      data: { teamId, adapterId: input.adapterId, kind: input.kind, input: input.payload },
      select: { id: true, seq: true },
    });
    // Sampling is idempotent, so a job a lost worker held may simply run again.
    await addQueueJob(tx, tasks.sample(input.baseModelId), request.id, { maxAttempts: 3 });
    return { requestId: request.id, seq: request.seq };
  });
}

export const requestSelect = {
  id: true,
  teamId: true,
  adapterId: true,
  seq: true,
  kind: true,
  status: true,
  output: true,
  error: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
} as const;

export function getRequest(db: DbTx, teamId: string, requestId: string) {
  return db.request.findFirst({ where: { id: requestId, teamId }, select: requestSelect });
}

/** For workers: a request with its input, whatever its team. */
export interface ClaimedRequest {
  id: string;
  teamId: string;
  adapterId: string | null;
  seq: number | null;
  kind: RequestKind;
  input: Prisma.JsonValue;
}

/**
 * Marks a request running and returns it with its input; empty when it has
 * already finished. One statement (a hot path: every call goes through it).
 */
export function claimRequest(db: DbTx, requestId: string): Promise<ClaimedRequest[]> {
  return db.$queryRaw<ClaimedRequest[]>`
    UPDATE "Request" SET status = 'RUNNING', "startedAt" = now()
    WHERE id = ${requestId} AND status IN ('QUEUED', 'RUNNING')
    RETURNING id, "teamId", "adapterId", seq, kind::text AS kind, input`;
}

/**
 * Writes a request's outcome and announces it, in one statement; a request
 * already finished (e.g. cancelled meanwhile) is left as it was.
 */
export async function finishRequest(
  db: DbTx,
  requestId: string,
  outcome: { output: Prisma.InputJsonValue } | { error: string } | { cancelled: string },
): Promise<boolean> {
  const status = "output" in outcome ? "SUCCEEDED" : "error" in outcome ? "FAILED" : "CANCELLED";
  const output = "output" in outcome ? JSON.stringify(outcome.output) : null;
  const error = "error" in outcome ? outcome.error : "cancelled" in outcome ? outcome.cancelled : null;
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH done AS (
      UPDATE "Request" SET status = ${status}::"RequestStatus", output = ${output}::jsonb,
        error = ${error}, "finishedAt" = now()
      WHERE id = ${requestId} AND status IN ('QUEUED', 'RUNNING')
      RETURNING id)
    SELECT id FROM done, LATERAL (SELECT pg_notify(${REQUEST_CHANNEL}, done.id)) AS notified`;
  return rows.length === 1;
}
