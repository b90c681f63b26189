// Placement (issue: control plane): each adapter's mutable training state lives
// on one worker, chosen by base model and free capacity; when a worker's
// heartbeat stops, its adapters are released and re-placed on their next call,
// from their last checkpoint.
//
// Sharing the slots (issue 44), the one statement of the rule. A worker holds
// at most `capacity` adapters (its slots), never more, and (issue 45) no more
// training state than its adapter memory (the sum of their stateBytes): every
// placement counts and writes under one advisory lock. The pool of an adapter is the online
// workers with its base model loaded. The teams wanting slots there are those
// holding one, those with a queued or running job over that base model, and
// the team asking. A team's share is max(1, floor(pool slots / teams wanting)).
// - A training call's adapter takes any free slot. When there is none, the
//   worker is asked to let an idle adapter go (makeRoom): first one of the team
//   holding the most over its share, else the least recently used; the call
//   answers a retryable 503 until the slot is free.
// - A server-side job holds its slot for hours and cannot be asked to leave,
//   so it starts only where (1) jobs keep at least one slot of the pool free
//   of jobs (when the pool has more than one), so another team's training call
//   always finds room, at once or after an idle adapter leaves; (2) its team
//   then holds no more than its share; (3) the worker that claimed it has a
//   free slot. Otherwise it stays QUEUED and its run is tried again later,
//   spending none of its attempts (claimJobRun).
import type { DbTx } from "./client.ts";
import { staleAfterMs } from "./env.ts";
import { Prisma } from "./generated/prisma/client.ts";
import { METRICS_CHANNEL, REQUEST_CHANNEL } from "./queue-names.ts";
import { tasks } from "./queue-tasks.ts";

export class NoWorkerError extends Error {
  override name = "NoWorkerError";
}

export { DEFAULT_STALE_AFTER_MS, staleAfterMs } from "./env.ts";

/** A team's share of a pool's slots: at least one, so every team can train. */
export function teamShare(slots: number, teamsWanting: number): number {
  return Math.max(1, Math.floor(slots / Math.max(1, teamsWanting)));
}

/** How many of a pool's slots jobs may hold together: all but one, so training calls always find room. */
export function jobSlotLimit(slots: number): number {
  return slots > 1 ? slots - 1 : slots;
}

/** What the rule needs to know of an adapter's pool, its own slot left out. */
export interface SlotShares {
  /** Slots of the online workers with the adapter's base model loaded. */
  slots: number;
  /** Each team's share of them (teamShare). */
  share: number;
  /** Slots each team holds there. */
  held: Map<string, number>;
  /** Slots held there by adapters whose job is queued or running. */
  jobSlots: number;
}

const online = (stale: number) => Prisma.sql`w.status = 'ONLINE'
  AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)`;

/** The slots of an adapter's pool, who holds them, and each team's share (the asker's team counted as wanting). */
export async function slotShares(tx: DbTx, adapterId: string): Promise<SlotShares> {
  const [row] = await tx.$queryRaw<
    { slots: number; teams: number; jobSlots: number; held: Record<string, number> }[]
  >`
    WITH me AS (
      SELECT a.id, a."teamId", a."baseModelId", b.name AS base
      FROM "Adapter" a JOIN "BaseModel" b ON b.id = a."baseModelId" WHERE a.id = ${adapterId}),
    pool AS (
      SELECT w.id, w.capacity FROM "Worker" w, me WHERE ${online(staleAfterMs())} AND me.base = ANY(w."loadedModels")),
    placed AS (
      SELECT p."teamId", EXISTS (SELECT 1 FROM "Job" j WHERE j."adapterId" = p.id
          AND j.status IN ('QUEUED', 'RUNNING')) AS "forJob"
      FROM "Adapter" p WHERE p."workerId" IN (SELECT id FROM pool) AND p.id <> ${adapterId}),
    wanting AS (
      SELECT "teamId" FROM placed
      UNION SELECT j."teamId" FROM "Job" j JOIN "Adapter" ja ON ja.id = j."adapterId", me
        WHERE j.status IN ('QUEUED', 'RUNNING') AND ja."baseModelId" = me."baseModelId"
      UNION SELECT "teamId" FROM me)
    SELECT (SELECT coalesce(sum(capacity), 0) FROM pool)::int AS slots,
      (SELECT count(*) FROM wanting)::int AS teams,
      (SELECT count(*) FROM placed WHERE "forJob")::int AS "jobSlots",
      (SELECT coalesce(json_object_agg("teamId", n), '{}'::json)
        FROM (SELECT "teamId", count(*)::int AS n FROM placed GROUP BY "teamId") h) AS held`;
  const slots = row?.slots ?? 0;
  return {
    slots,
    share: teamShare(slots, row?.teams ?? 1),
    held: new Map(Object.entries(row?.held ?? {})),
    jobSlots: row?.jobSlots ?? 0,
  };
}

/** Teams holding more than their share, the furthest over first: their idle adapters leave first. */
export function teamsOverShare(shares: SlotShares): string[] {
  return [...shares.held]
    .filter(([, held]) => held > shares.share)
    .sort((a, b) => b[1] - a[1])
    .map(([teamId]) => teamId);
}

/**
 * One placement decision at a time, service-wide (a transaction-scoped advisory
 * lock): the slots counted stay the slots written, so no worker is overfilled.
 * Taken after the placed adapter's row lock, never before.
 */
async function lockPlacement(tx: DbTx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('opentinker:placement'))`;
}

/** Where makeRoom may look for an idle adapter to let go: one worker's, or one team's. */
export type RoomScope = { workerId: string } | { teamId: string };

/** A job's adapter took a slot on the claiming worker, or the job waits: why, and where room would help. */
export type JobPlacement = { placed: true } | { placed: false; reason: string; room: RoomScope | null };

/** Rules (1) and (2) for a job of `teamId`: why it must wait, or null when it may start. */
function waitForShare(shares: SlotShares, teamId: string): JobPlacement | null {
  const jobLimit = jobSlotLimit(shares.slots);
  if (shares.jobSlots + 1 > jobLimit)
    return {
      placed: false,
      reason: `jobs hold ${shares.jobSlots} of the ${jobLimit} slots they may`,
      room: null,
    };
  const held = shares.held.get(teamId) ?? 0;
  if (held + 1 > shares.share)
    return {
      placed: false,
      reason: `the team holds ${held} slots, its share is ${shares.share}`,
      room: { teamId },
    };
  return null;
}

/**
 * Places a job's adapter on the worker that claimed the job, within the rule
 * above, or says why the job must wait. Call in a transaction; it locks the
 * adapter row, then placement.
 */
export async function placeJobAdapter(
  tx: DbTx,
  job: { teamId: string; adapterId: string },
  workerId: string,
): Promise<JobPlacement> {
  await tx.$queryRaw`SELECT id FROM "Adapter" WHERE id = ${job.adapterId} AND "teamId" = ${job.teamId} FOR UPDATE`;
  await lockPlacement(tx);
  const shares = await slotShares(tx, job.adapterId);
  // A worker without the base model has no pool: the job fails there as it would have.
  const waiting = shares.slots > 0 ? waitForShare(shares, job.teamId) : null;
  if (waiting) return waiting;
  const [worker] = await tx.$queryRaw<
    { capacity: number; used: number; memory: number | null; bytes: number; own: number }[]
  >`
    SELECT w.capacity, (SELECT count(*) FROM "Adapter" p WHERE p."workerId" = w.id AND p.id <> ${job.adapterId})::int AS used,
      ${memoryOf()} AS memory, ${bytesOn(job.adapterId)} AS bytes,
      coalesce((SELECT "stateBytes" FROM "Adapter" WHERE id = ${job.adapterId}), 0)::float8 AS own
    FROM "Worker" w WHERE w.id = ${workerId}`;
  if (!worker || worker.used >= worker.capacity)
    return { placed: false, reason: `worker ${workerId} is full`, room: { workerId } };
  if (worker.memory !== null && worker.own > worker.memory)
    throw new AdapterTooLargeError(
      `adapter ${job.adapterId}'s training state needs ${mib(worker.own)} MiB, more than worker ${workerId}'s adapter memory (${mib(worker.memory)} MiB, WORKER_ADAPTER_MEMORY_MIB)`,
    );
  if (worker.memory !== null && worker.bytes > worker.memory)
    return {
      placed: false,
      reason: `worker ${workerId}'s adapter memory (${mib(worker.memory)} MiB) is full`,
      room: { workerId },
    };
  await tx.adapter.update({ where: { id: job.adapterId }, data: { workerId } });
  return { placed: true };
}

/** A worker's adapter memory in bytes (null: no limit). Over alias w. */
const memoryOf = () => Prisma.sql`(w."adapterMemoryMiB"::float8 * 1048576)`;

/** The training-state bytes worker w would hold with `adapterId` placed on it (others' plus its own). */
const bytesOn = (adapterId: string) => Prisma.sql`(
  coalesce((SELECT sum(p."stateBytes") FROM "Adapter" p WHERE p."workerId" = w.id AND p.id <> ${adapterId}), 0)
  + coalesce((SELECT "stateBytes" FROM "Adapter" WHERE id = ${adapterId}), 0))::float8`;

const mib = (bytes: number) => Math.ceil(bytes / 2 ** 20);

/** An adapter too large for every worker, even emptied, as a clear error. */
export class AdapterTooLargeError extends RangeError {
  override name = "AdapterTooLargeError";
}

/**
 * Why no worker took the adapter: too large for any online worker's adapter
 * memory even when empty (an error no retry cures), else none has room now
 * (retryable: makeRoom frees some).
 */
async function refuseUnplaceable(tx: DbTx, adapterId: string, stale: number): Promise<never> {
  const [row] = await tx.$queryRaw<{ need: number | null; largest: number | null; unlimited: boolean }[]>`
    SELECT (SELECT "stateBytes" FROM "Adapter" WHERE id = ${adapterId}) AS need,
      max(w."adapterMemoryMiB")::float8 * 1048576 AS largest, bool_or(w."adapterMemoryMiB" IS NULL) AS unlimited
    FROM "Worker" w WHERE w.status = 'ONLINE'
      AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)`;
  if (row?.need != null && row.largest != null && !row.unlimited && row.need > row.largest)
    throw new AdapterTooLargeError(
      `adapter ${adapterId}'s training state needs ${mib(row.need)} MiB, more than any online worker's adapter memory (at most ${mib(row.largest)} MiB, WORKER_ADAPTER_MEMORY_MIB): use a smaller rank, fewer modules, or a worker with more memory`,
    );
  throw new NoWorkerError(
    `no online worker has a free slot and the adapter memory to hold adapter ${adapterId}; start a worker or raise WORKER_CAPACITY / WORKER_ADAPTER_MEMORY_MIB`,
  );
}

/**
 * The worker holding an adapter, placing it first if it has none (or its worker
 * is no longer online). Call inside the transaction that locked the adapter row.
 */
export async function placeAdapter(tx: DbTx, adapterId: string): Promise<string> {
  const stale = staleAfterMs();
  const [current] = await tx.$queryRaw<{ workerId: string }[]>`
    SELECT a."workerId" FROM "Adapter" a JOIN "Worker" w ON w.id = a."workerId"
    WHERE a.id = ${adapterId} AND w.status = 'ONLINE'
      AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)`;
  if (current) return current.workerId;
  await lockPlacement(tx);
  // Prefer a worker that already has the base model loaded, then the emptiest.
  const [chosen] = await tx.$queryRaw<{ id: string }[]>`
    SELECT w.id FROM "Worker" w, "Adapter" a JOIN "BaseModel" b ON b.id = a."baseModelId"
    WHERE a.id = ${adapterId} AND w.status = 'ONLINE'
      AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)
      AND (SELECT count(*) FROM "Adapter" p WHERE p."workerId" = w.id) < w.capacity
      AND (${memoryOf()} IS NULL OR ${bytesOn(adapterId)} <= ${memoryOf()})
    ORDER BY (b.name = ANY(w."loadedModels")) DESC,
      (SELECT count(*) FROM "Adapter" p WHERE p."workerId" = w.id)::float8 / w.capacity ASC, w."startedAt" ASC
    LIMIT 1`;
  if (!chosen) return refuseUnplaceable(tx, adapterId, stale);
  await tx.adapter.update({ where: { id: adapterId }, data: { workerId: chosen.id } });
  return chosen.id;
}

/**
 * Marks workers whose heartbeat stopped as offline, releases their adapters
 * (failing those adapters' unfinished calls: their in-memory state is gone) and
 * unlocks the queue jobs they held so that other workers pick them up.
 * Returns the ids of the workers it found lost.
 */
export async function reapLostWorkers(db: DbTx): Promise<string[]> {
  const stale = staleAfterMs();
  const lost = await db.$queryRaw<{ id: string; queueWorkerIds: string[] }[]>`
    UPDATE "Worker" SET status = 'OFFLINE'
    WHERE status <> 'OFFLINE' AND "heartbeatAt" < now() - make_interval(secs => ${stale / 1000}::float8)
    RETURNING id, "queueWorkerIds"`;
  for (const worker of lost) await releaseWorker(db, worker.id, worker.queueWorkerIds);
  return lost.map((w) => w.id);
}

/**
 * A worker known to be gone (its supervisor saw it exit): marked offline and
 * everything it held released at once, without waiting for its heartbeat to go stale.
 */
export async function releaseLostWorker(db: DbTx, workerId: string): Promise<void> {
  const [row] = await db.$queryRaw<{ queueWorkerIds: string[] }[]>`
    UPDATE "Worker" SET status = 'OFFLINE' WHERE id = ${workerId} RETURNING "queueWorkerIds"`;
  if (row) await releaseWorker(db, workerId, row.queueWorkerIds);
}

/**
 * Releases what a worker held: its adapters, its training queue, its job locks,
 * and its running jobs (back to the queue, to resume from their last checkpoint
 * on another worker; cancelled instead when a cancel was asked for).
 */
export async function releaseWorker(db: DbTx, workerId: string, queueWorkerIds: string[]): Promise<void> {
  const adapters = await db.adapter.findMany({ where: { workerId }, select: { id: true } });
  for (const adapter of adapters)
    await failAdapterRequests(
      db,
      adapter.id,
      `worker ${workerId} holding adapter ${adapter.id} was lost; the adapter resumes from its last checkpoint`,
    );
  await db.adapter.updateMany({ where: { workerId }, data: { workerId: null } });
  if (queueWorkerIds.length > 0)
    await db.$executeRaw`SELECT graphile_worker.force_unlock_workers(${queueWorkerIds}::text[])`;
  // Its training jobs belong to requests failed above; nobody else may run them.
  await db.$executeRaw`SELECT graphile_worker.complete_jobs(
    ARRAY(SELECT id FROM graphile_worker.jobs WHERE task_identifier = ${tasks.train(workerId)}))`;
  await db.$executeRaw`
    WITH released AS (
      UPDATE "Job" SET "workerId" = NULL,
        status = CASE WHEN "cancelRequestedAt" IS NULL THEN 'QUEUED' ELSE 'CANCELLED' END::"JobStatus",
        "finishedAt" = CASE WHEN "cancelRequestedAt" IS NULL THEN NULL ELSE now() END
      WHERE "workerId" = ${workerId} AND status = 'RUNNING'
      RETURNING id, "teamId", status::text AS status)
    SELECT pg_notify(${METRICS_CHANNEL}, json_build_object('teamId', "teamId", 'jobId', id, 'status', status)::text)
    FROM released`;
}

/** Fails every unfinished request of an adapter (its worker was lost). */
export async function failAdapterRequests(db: DbTx, adapterId: string, reason: string): Promise<number> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH done AS (
      UPDATE "Request" SET status = 'FAILED', error = ${reason}, "finishedAt" = now()
      WHERE "adapterId" = ${adapterId} AND seq IS NOT NULL AND status IN ('QUEUED', 'RUNNING')
      RETURNING id)
    SELECT id FROM done, LATERAL (SELECT pg_notify(${REQUEST_CHANNEL}, done.id)) AS notified`;
  return rows.length;
}
