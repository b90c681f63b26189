import type { DbTx } from "./client.ts";
import { workerSelect } from "./selects.ts";

export function registerWorker(
  db: DbTx,
  input: {
    host: string;
    pid: number;
    capacity: number;
    loadedModels?: string[];
    /** The device it computes on: "cpu" unless said. */
    device?: string;
    deviceDescription?: string;
    deviceMemoryMiB?: number | null;
    /** Each base model's sampler budgets. */
    kvCacheMiB?: number | null;
    policyPoolMiB?: number | null;
  },
) {
  return db.worker.create({ data: input, select: workerSelect });
}

/** Advances a worker's heartbeat; false when the row is gone (it must re-register). */
export async function heartbeatWorker(db: DbTx, workerId: string, loadedModels?: string[]): Promise<boolean> {
  const { count } = await db.worker.updateMany({
    where: { id: workerId, status: { not: "OFFLINE" } },
    data: { heartbeatAt: new Date(), ...(loadedModels ? { loadedModels } : {}) },
  });
  return count === 1;
}

/** Brings a worker written off as lost back online; false when its row is gone. */
export async function reviveWorker(db: DbTx, workerId: string): Promise<boolean> {
  const { count } = await db.worker.updateMany({
    where: { id: workerId },
    data: { status: "ONLINE", heartbeatAt: new Date() },
  });
  return count === 1;
}

export async function markWorkerOffline(db: DbTx, workerId: string): Promise<void> {
  await db.worker.updateMany({ where: { id: workerId }, data: { status: "OFFLINE" } });
}

/** The workers not written off, oldest first, with how many adapters each holds. */
export function listWorkers(db: DbTx) {
  return db.worker.findMany({
    where: { status: { not: "OFFLINE" } },
    orderBy: { startedAt: "asc" },
    select: { ...workerSelect, _count: { select: { adapters: true } } },
  });
}
