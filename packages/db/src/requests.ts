// API futures (C2): every call is a durable Request row, enqueued in the same
// transaction on graphile-worker's Postgres queue. Training calls of one adapter
// share a queue (so they run one at a time, in seq order) on the worker holding
// the adapter; sampling calls go to any worker with the base model.

import { randomUUID } from "node:crypto";
import type { Db, DbTx } from "./client.ts";
import { NotFoundError, postgresCause, RETRY_SQLSTATE, rethrowDomainError } from "./errors.ts";
import { Prisma, type RequestKind } from "./generated/prisma/client.ts";
import {
  NoWorkerError,
  placeAdapter,
  type RoomScope,
  slotShares,
  staleAfterMs,
  teamsOverShare,
} from "./placement.ts";
import { REQUEST_CHANNEL } from "./queue-names.ts";
import { addJobSql, queueTasks } from "./queue-tasks.ts";

export const TRAINING_KINDS = [
  "FORWARD",
  "FORWARD_BACKWARD",
  "OPTIM_STEP",
  "SAVE_WEIGHTS_FOR_SAMPLER",
  "SAVE_STATE",
  "LOAD_STATE",
  "UNLOAD",
] as const satisfies readonly RequestKind[];
export type TrainingRequestKind = (typeof TRAINING_KINDS)[number];

export interface EnqueuedRequest {
  requestId: string;
  seq: number | null;
}

/**
 * Runs an enqueue statement. The queued-request quota is enforced by a trigger
 * on every Request insert (prisma/migrations: serialised per team, so concurrent
 * calls cannot overshoot it); a refusal fails the whole statement, so nothing is
 * written, and comes back as QuotaExceededError (or UnknownTeamError).
 */
async function enqueueing<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      // The trigger saw the team come near its quota mid-insert: the next run takes the exact path.
      if (postgresCause(error)?.code === RETRY_SQLSTATE && attempt < 3) continue;
      return rethrowDomainError(error);
    }
  }
}

interface NewRequest {
  teamId: string;
  adapterId: string | null;
  seq: number | null;
  kind: RequestKind;
  payload: Prisma.InputJsonValue;
  task: string;
  queue: string | null;
  maxAttempts: number;
}

/** The queue job of the statement's `inserted` Request row (keyed by the request's id). */
function queueInserted(task: string | Prisma.Sql, queue: string | null, maxAttempts: number) {
  const payload = Prisma.sql`json_build_object('requestId', inserted.id)`;
  return addJobSql({ task, payload, queue, maxAttempts, jobKey: Prisma.sql`inserted.id` });
}

/**
 * Inserts the Request row and its queue job in one statement (a hot path: a
 * round trip saved is a millisecond off every call), if `allowed` holds.
 */
function insertAndQueue(r: NewRequest & { id: string }) {
  return Prisma.sql`
    inserted AS (
      INSERT INTO "Request" (id, "teamId", "adapterId", seq, kind, input)
      VALUES (${r.id}, ${r.teamId}, ${r.adapterId}, ${r.seq}::int, ${r.kind}::"RequestKind", ${JSON.stringify(r.payload)}::jsonb)
      RETURNING id),
    queued_job AS (
      SELECT ${queueInserted(r.task, r.queue, r.maxAttempts)} AS job
      FROM inserted)`;
}

interface TrainingCall {
  adapterId: string;
  kind: TrainingRequestKind;
  payload: Prisma.InputJsonValue;
  /** The new request's id; a fresh one when absent. */
  requestId?: string;
}

/**
 * Enqueues a training call on an adapter of this team: allocates its sequence
 * number, places the adapter on a worker if it has none, and queues the work.
 */
export async function enqueueTrainingRequest(
  db: Db,
  teamId: string,
  input: TrainingCall,
): Promise<EnqueuedRequest> {
  const id = input.requestId ?? randomUUID();
  return enqueueing(
    async () =>
      (await enqueueOnPlacedAdapter(db, teamId, id, input)) ?? enqueueAndPlace(db, teamId, id, input),
  );
}

const onlineWorker = (stale: number, workerId: Prisma.Sql) => Prisma.sql`
  EXISTS (SELECT 1 FROM "Worker" w WHERE w.id = ${workerId} AND w.status = 'ONLINE'
    AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8))`;

/**
 * The common case in one statement (every training call goes through here): the
 * adapter already sits on an online worker. The seq bump locks the adapter row,
 * which orders concurrent calls. Null when the adapter must be placed first.
 */
async function enqueueOnPlacedAdapter(
  db: Db,
  teamId: string,
  id: string,
  input: TrainingCall,
): Promise<EnqueuedRequest | null> {
  const train = queueTasks.train;
  // The task id is the holding worker's, read in the same statement.
  const job = queueInserted(
    Prisma.sql`${train.idPrefix}::text || bumped."workerId"`,
    train.queue(input.adapterId),
    train.maxAttempts,
  );
  const [row] = await db.$queryRaw<{ seq: number | null; exists: boolean }[]>`
    WITH bumped AS (
      UPDATE "Adapter" SET "requestSeq" = "requestSeq" + 1
      WHERE id = ${input.adapterId} AND "teamId" = ${teamId} AND status = 'ACTIVE'
        AND ${onlineWorker(staleAfterMs(), Prisma.sql`"Adapter"."workerId"`)}
      RETURNING "requestSeq", "workerId"),
    inserted AS (
      INSERT INTO "Request" (id, "teamId", "adapterId", seq, kind, input)
      SELECT ${id}, ${teamId}, ${input.adapterId}, bumped."requestSeq", ${input.kind}::"RequestKind",
        ${JSON.stringify(input.payload)}::jsonb
      FROM bumped
      RETURNING id),
    queued_job AS (
      SELECT ${job} AS job
      FROM inserted, bumped)
    SELECT (SELECT "requestSeq" FROM bumped) AS seq,
      EXISTS (SELECT 1 FROM "Adapter" WHERE id = ${input.adapterId} AND "teamId" = ${teamId}
        AND status = 'ACTIVE') AS exists,
      (SELECT count(*) FROM queued_job) AS added`;
  if (!row?.exists) throw new NotFoundError(`adapter ${input.adapterId} not found`);
  return row.seq == null ? null : { requestId: id, seq: row.seq };
}

/**
 * The adapter has no live worker: place it, then queue, in one transaction.
 * When every worker that could hold it is full, an idle adapter there is asked
 * to leave (makeRoom, by the slot-sharing rule) and the call is refused as
 * retryable (503): the retry finds the slot it freed.
 */
async function enqueueAndPlace(
  db: Db,
  teamId: string,
  id: string,
  input: TrainingCall,
): Promise<EnqueuedRequest> {
  try {
    return await placeAndQueue(db, teamId, id, input);
  } catch (error) {
    if (!(error instanceof NoWorkerError)) throw error;
    const making = await makeRoom(db, input.adapterId).catch((cause: unknown) => {
      console.error(`placement: could not make room for ${input.adapterId}: ${(cause as Error).message}`);
      return false;
    });
    throw new NoWorkerError(
      making
        ? "every worker is full; an idle adapter is being saved and released to make room: retry in a moment (a team holding more than its share of slots gives one up first)"
        : error.message,
    );
  }
}

function placeAndQueue(db: Db, teamId: string, id: string, input: TrainingCall): Promise<EnqueuedRequest> {
  return db.$transaction(async (tx) => {
    // The next seq under the adapter row's lock (which orders concurrent calls).
    const [row] = await tx.$queryRaw<{ seq: number | null }[]>`
      UPDATE "Adapter" SET "requestSeq" = "requestSeq" + 1
      WHERE id = ${input.adapterId} AND "teamId" = ${teamId} AND status = 'ACTIVE'
      RETURNING "requestSeq" AS seq`;
    if (row?.seq == null) throw new NotFoundError(`adapter ${input.adapterId} not found`);
    const workerId = await placeAdapter(tx, input.adapterId);
    const request = {
      id,
      teamId,
      adapterId: input.adapterId,
      seq: row.seq,
      kind: input.kind,
      payload: input.payload,
    };
    await tx.$queryRaw`
      WITH ${insertAndQueue({ ...request, task: queueTasks.train.id(workerId), queue: queueTasks.train.queue(input.adapterId), maxAttempts: queueTasks.train.maxAttempts })}
      SELECT count(*) FROM queued_job`;
    return { requestId: id, seq: row.seq };
  });
}

/** Enqueues a sampling call (sample or computeLogprobs) on a base model's workers, in one statement. */
export async function enqueueSamplingRequest(
  db: Db,
  teamId: string,
  input: {
    kind: "SAMPLE" | "COMPUTE_LOGPROBS";
    baseModelId: string;
    adapterId: string | null;
    payload: Prisma.InputJsonValue;
    /** The new request's id; a fresh one when absent. */
    requestId?: string;
  },
): Promise<EnqueuedRequest> {
  const id = input.requestId ?? randomUUID();
  // Sampling is idempotent, so a job a lost worker held may simply run again.
  const request = {
    id,
    teamId,
    adapterId: input.adapterId,
    seq: null,
    kind: input.kind,
    payload: input.payload,
  };
  const [row] = await enqueueing(
    () => db.$queryRaw<{ added: bigint }[]>`
      WITH ${insertAndQueue({ ...request, task: queueTasks.sample.id(input.baseModelId), queue: null, maxAttempts: queueTasks.sample.maxAttempts })}
      SELECT (SELECT count(*) FROM queued_job) AS added`,
  );
  if (Number(row?.added) !== 1) throw new Error(`enqueueSamplingRequest: request ${id} was not queued`);
  return { requestId: id, seq: null };
}

export interface RequestState {
  id: string;
  teamId: string;
  adapterId: string | null;
  seq: number | null;
  kind: RequestKind;
  status: "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";
  output: Prisma.JsonValue | null;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A request of this team, or null. Raw SQL: every future's wait reads it, twice. */
export async function getRequest(db: DbTx, teamId: string, requestId: string): Promise<RequestState | null> {
  const rows = await db.$queryRaw<RequestState[]>`
    SELECT id, "teamId", "adapterId", seq, kind::text AS kind, status::text AS status, output, error,
      "createdAt", "startedAt", "finishedAt"
    FROM "Request" WHERE id = ${requestId} AND "teamId" = ${teamId}`;
  return rows[0] ?? null;
}

/** For workers: a request with its input, whatever its team. */
export interface ClaimedRequest {
  id: string;
  teamId: string;
  adapterId: string | null;
  seq: number | null;
  kind: RequestKind;
  input: Prisma.JsonValue;
  /** Training calls only: a server-side job training the same adapter (the call must not run). */
  busyJobId: string | null;
}

/**
 * Marks a request running and returns it with its input; empty when it has
 * already finished. One statement (a hot path: every call goes through it).
 */
export function claimRequest(db: DbTx, requestId: string): Promise<ClaimedRequest[]> {
  return db.$queryRaw<ClaimedRequest[]>`
    UPDATE "Request" r SET status = 'RUNNING', "startedAt" = now()
    WHERE id = ${requestId} AND status IN ('QUEUED', 'RUNNING')
    RETURNING id, "teamId", "adapterId", seq, kind::text AS kind, input,
      (SELECT j.id FROM "Job" j WHERE r.seq IS NOT NULL AND j."adapterId" = r."adapterId"
        AND j.status IN ('QUEUED', 'RUNNING') LIMIT 1) AS "busyJobId"`;
}

/** What a waiter needs of a finished request; sent inside the NOTIFY when it fits. */
export type RequestOutcome = Pick<RequestState, "id" | "teamId" | "kind" | "status" | "output" | "error">;

// NOTIFY payloads must stay under 8000 bytes; a larger outcome sends only the id.
const MAX_NOTICE_BYTES = 7900;

export interface FinishedRequest {
  /** False when the request had already finished (it was left as it was). */
  finished: boolean;
  /** A training call: later calls of its adapter are queued behind it. */
  followedUp: boolean;
}

/**
 * Writes a request's outcome and announces it, in one statement; a request
 * already finished (e.g. cancelled meanwhile) is left as it was. The notice
 * carries the outcome itself when small, so waiters need not read it back.
 */
export async function finishRequest(
  db: DbTx,
  requestId: string,
  outcome: { output: Prisma.InputJsonValue } | { error: string } | { cancelled: string },
): Promise<FinishedRequest> {
  const status = "output" in outcome ? "SUCCEEDED" : "error" in outcome ? "FAILED" : "CANCELLED";
  const output = "output" in outcome ? JSON.stringify(outcome.output) : null;
  const error = "error" in outcome ? outcome.error : "cancelled" in outcome ? outcome.cancelled : null;
  const rows = await db.$queryRaw<{ id: string; followedUp: boolean }[]>`
    WITH done AS (
      UPDATE "Request" SET status = ${status}::"RequestStatus", output = ${output}::jsonb,
        error = ${error}, "finishedAt" = now()
      WHERE id = ${requestId} AND status IN ('QUEUED', 'RUNNING')
      RETURNING id, "adapterId", seq, json_build_object('id', id, 'teamId', "teamId", 'kind', kind, 'status', status,
        'output', output, 'error', error)::text AS notice)
    SELECT id, EXISTS (SELECT 1 FROM "Request" n WHERE done.seq IS NOT NULL
        AND n."adapterId" = done."adapterId" AND n.seq > done.seq AND n.status = 'QUEUED') AS "followedUp"
    FROM done, LATERAL (SELECT pg_notify(${REQUEST_CHANNEL},
      CASE WHEN octet_length(done.notice) <= ${MAX_NOTICE_BYTES} THEN done.notice ELSE done.id END)) AS notified`;
  return { finished: rows.length === 1, followedUp: rows[0]?.followedUp === true };
}

/** A request notice: the outcome when it was sent along, else only the id (read it back). */
export function parseRequestNotice(payload: string): { id: string; outcome: RequestOutcome | null } {
  if (!payload.startsWith("{")) return { id: payload, outcome: null };
  const outcome = JSON.parse(payload) as RequestOutcome;
  return { id: outcome.id, outcome };
}

/**
 * Asks an idle adapter on a worker that could hold `adapterId` (same base model
 * loaded) to save its state and leave: a RELEASE call queued behind its own
 * calls. Idle: no unfinished call, no queued or running job, no release already
 * on its way. The slot-sharing rule (placement.ts) picks it: one of the team
 * holding the most over its share first, else the least recently used. `scope`
 * narrows the choice to one worker's or one team's adapters (a waiting job's
 * claim). True when one was asked (or already is).
 */
export async function makeRoom(db: Db, adapterId: string, scope?: RoomScope): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const stale = staleAfterMs();
    const overShare = teamsOverShare(await slotShares(tx, adapterId));
    const onWorker = scope && "workerId" in scope ? scope.workerId : null;
    const ofTeam = scope && "teamId" in scope ? scope.teamId : null;
    const [victim] = await tx.$queryRaw<{ id: string; teamId: string; workerId: string; pending: boolean }[]>`
      SELECT v.id, v."teamId", v."workerId",
        EXISTS (SELECT 1 FROM "Request" r WHERE r."adapterId" = v.id AND r.kind = 'RELEASE'
                AND r.status IN ('QUEUED', 'RUNNING')) AS pending
      FROM "Adapter" v
      JOIN "Worker" w ON w.id = v."workerId"
      JOIN "Adapter" a ON a.id = ${adapterId}
      JOIN "BaseModel" b ON b.id = a."baseModelId"
      WHERE v.id <> ${adapterId} AND w.status = 'ONLINE' AND b.name = ANY(w."loadedModels")
        AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)
        AND (${onWorker}::text IS NULL OR v."workerId" = ${onWorker}::text)
        AND (${ofTeam}::text IS NULL OR v."teamId" = ${ofTeam}::text)
        AND NOT EXISTS (SELECT 1 FROM "Request" r WHERE r."adapterId" = v.id AND r.kind <> 'RELEASE'
                        AND r.status IN ('QUEUED', 'RUNNING'))
        AND NOT EXISTS (SELECT 1 FROM "Job" j WHERE j."adapterId" = v.id AND j.status IN ('QUEUED', 'RUNNING'))
      ORDER BY pending DESC,
        array_position(${overShare}::text[], v."teamId") ASC NULLS LAST,
        (SELECT max(r."createdAt") FROM "Request" r WHERE r."adapterId" = v.id) ASC NULLS FIRST
      LIMIT 1
      FOR UPDATE OF v SKIP LOCKED`;
    if (!victim) return false;
    if (victim.pending) return true;
    const [row] = await tx.$queryRaw<{ seq: number }[]>`
      UPDATE "Adapter" SET "requestSeq" = "requestSeq" + 1 WHERE id = ${victim.id} RETURNING "requestSeq" AS seq`;
    const train = queueTasks.train;
    await tx.$queryRaw`
      WITH ${insertAndQueue({
        id: randomUUID(),
        teamId: victim.teamId,
        adapterId: victim.id,
        seq: row?.seq ?? null,
        kind: "RELEASE",
        payload: { adapterId: victim.id },
        task: train.id(victim.workerId),
        queue: train.queue(victim.id),
        maxAttempts: train.maxAttempts,
      })}
      SELECT count(*) FROM queued_job`;
    return true;
  });
}

/**
 * A RELEASE call (seq `seq`) ran on `workerId`: the adapter leaves it unless
 * calls came in behind the release (then it stays, in use again). True when it left.
 */
export async function finishRelease(
  db: DbTx,
  teamId: string,
  adapterId: string,
  workerId: string,
  seq: number,
): Promise<boolean> {
  const left = await db.$executeRaw`
    UPDATE "Adapter" a SET "workerId" = NULL
    WHERE a.id = ${adapterId} AND a."teamId" = ${teamId} AND a."workerId" = ${workerId}
      AND NOT EXISTS (SELECT 1 FROM "Request" r WHERE r."adapterId" = a.id AND r.seq > ${seq}
                      AND r.status IN ('QUEUED', 'RUNNING'))`;
  return left === 1;
}
