// The worker's side of the request queue (graphile-worker): which tasks it runs,
// and the queue-worker ids recorded on its row, so that if this process dies the
// jobs it held locked can be released to the others (db/placement.ts).
import { EventEmitter } from "node:events";
import { type Db, quietQueueLogger } from "@opentinker/db";
import { type Runner, run, type TaskList, type WorkerEvents, type WorkerPool } from "graphile-worker";

/** How long a fetch that found nothing after a follow-up waits before trying again (ms). */
const REFETCH_DELAYS_MS = [2, 10, 40, 150];

/**
 * Queue jobs whose completion has a follow-up waiting: the next training call of
 * the same adapter, queued behind it in its named queue. graphile-worker fires a
 * completion without awaiting it and fetches the next job at once, so that call
 * is still behind the queue's lock and would wait for the poll (2 s per call
 * when calls are pipelined). After such a completion, a fetch that comes back
 * empty is retried within milliseconds; other completions cost no extra fetch.
 */
export class FollowUps {
  private readonly pending = new Set<string>();

  /** A task says its queue job has a follow-up (finishRequest told it). */
  mark(jobId: string): void {
    this.pending.add(jobId);
  }

  attach(events: WorkerEvents, pool: () => WorkerPool | undefined): void {
    const retries = new Map<string, number>();
    events.on("job:complete", ({ worker, job }) => {
      if (this.pending.delete(job.id)) retries.set(worker.workerId, 0);
    });
    events.on("job:start", ({ worker }) => retries.delete(worker.workerId));
    events.on("worker:getJob:empty", ({ worker }) => {
      const attempt = retries.get(worker.workerId);
      if (attempt === undefined) return;
      const delay = REFETCH_DELAYS_MS[attempt];
      if (delay === undefined) return void retries.delete(worker.workerId);
      retries.set(worker.workerId, attempt + 1);
      setTimeout(() => pool()?.nudge(1), delay).unref();
    });
  }
}

export async function startQueue(
  db: Db,
  options: {
    url: string;
    workerId: string;
    concurrency: number;
    pollIntervalMs: number;
    taskList: TaskList;
    followUps: FollowUps;
  },
): Promise<Runner> {
  const events = new EventEmitter() as WorkerEvents;
  const ids: string[] = [];
  let workerPool: WorkerPool | undefined;
  // Jobs are locked by the pool's id (batched fetches) or by a worker's id.
  events.on("pool:create", ({ workerPool: created }) => {
    workerPool = created;
    ids.push(created.id);
  });
  events.on("worker:create", ({ worker }) => ids.push(worker.workerId));
  options.followUps.attach(events, () => workerPool);
  const runner = await run({
    connectionString: options.url,
    concurrency: options.concurrency,
    // One connection per concurrent job at most; the jobs' own queries use Prisma's pool.
    maxPoolSize: options.concurrency,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs,
    logger: quietQueueLogger,
    taskList: options.taskList,
    events,
  });
  await db.worker.update({ where: { id: options.workerId }, data: { queueWorkerIds: ids } });
  return runner;
}
