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
    /** Memory for adapters' training state (null: placement counts slots only). */
    adapterMemoryMiB?: number | null;
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
/** Workers not offline, each with how many adapters it holds and the bytes their training state takes. */
export async function listWorkers(db: DbTx) {
  const workers = await db.worker.findMany({
    where: { status: { not: "OFFLINE" } },
    orderBy: { startedAt: "asc" },
    select: { ...workerSelect, adapters: { select: { stateBytes: true } } },
  });
  return workers.map(({ adapters, ...w }) => ({
    ...w,
    placedAdapters: adapters.length,
    placedAdapterBytes: adapters.reduce((sum, a) => sum + (a.stateBytes ?? 0), 0),
  }));
}
