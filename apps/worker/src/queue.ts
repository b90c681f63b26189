// The worker's side of the request queue (graphile-worker): which tasks it runs,
// and the queue-worker ids recorded on its row, so that if this process dies the
// jobs it held locked can be released to the others (db/placement.ts).
import { EventEmitter } from "node:events";
import { type Db, quietQueueLogger } from "@opentinker/db";
import { type Runner, run, type TaskList, type WorkerEvents } from "graphile-worker";

export async function startQueue(
  db: Db,
  options: { url: string; workerId: string; concurrency: number; taskList: TaskList },
): Promise<Runner> {
  const events = new EventEmitter() as WorkerEvents;
  const ids: string[] = [];
  // Jobs are locked by the pool's id (batched fetches) or by a worker's id.
  events.on("pool:create", ({ workerPool }) => ids.push(workerPool.id));
  events.on("worker:create", ({ worker }) => ids.push(worker.workerId));
  const runner = await run({
    connectionString: options.url,
    concurrency: options.concurrency,
    // One connection per concurrent job at most; the jobs' own queries use Prisma's pool.
    maxPoolSize: options.concurrency,
    noHandleSignals: true,
    // New jobs arrive by LISTEN/NOTIFY; polling only catches retries.
    pollInterval: 2000,
    logger: quietQueueLogger,
    taskList: options.taskList,
    events,
  });
  await db.worker.update({ where: { id: options.workerId }, data: { queueWorkerIds: ids } });
  return runner;
}
