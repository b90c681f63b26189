// Placement (issue: control plane): each adapter's mutable training state lives
// on one worker, chosen by base model and free capacity; when a worker's
// heartbeat stops, its adapters are released and re-placed on their next call,
// from their last checkpoint.
import type { DbTx } from "./client.ts";
import { staleAfterMs } from "./env.ts";
import { METRICS_CHANNEL, REQUEST_CHANNEL } from "./queue-names.ts";
import { tasks } from "./queue-tasks.ts";

export class NoWorkerError extends Error {
  override name = "NoWorkerError";
}

export { DEFAULT_STALE_AFTER_MS, staleAfterMs } from "./env.ts";

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
  // Prefer a worker that already has the base model loaded, then the emptiest.
  const [chosen] = await tx.$queryRaw<{ id: string }[]>`
    SELECT w.id FROM "Worker" w, "Adapter" a JOIN "BaseModel" b ON b.id = a."baseModelId"
    WHERE a.id = ${adapterId} AND w.status = 'ONLINE'
      AND w."heartbeatAt" > now() - make_interval(secs => ${stale / 1000}::float8)
      AND (SELECT count(*) FROM "Adapter" p WHERE p."workerId" = w.id) < w.capacity
    ORDER BY (b.name = ANY(w."loadedModels")) DESC,
      (SELECT count(*) FROM "Adapter" p WHERE p."workerId" = w.id)::float8 / w.capacity ASC, w."startedAt" ASC
    LIMIT 1`;
  if (!chosen)
    throw new NoWorkerError(
      `no online worker has free capacity to hold adapter ${adapterId}; start a worker or raise WORKER_CAPACITY`,
    );
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
