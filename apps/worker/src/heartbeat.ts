import { type Db, heartbeatWorker, registerWorker, reviveWorker } from "@opentinker/db";

export interface WorkerIdentity {
  host: string;
  pid: number;
  capacity: number;
  loadedModels: string[];
  device: string;
  deviceDescription: string;
  deviceMemoryMiB: number | null;
  kvCacheMiB: number;
  policyPoolMiB: number;
  adapterMemoryMiB: number;
}

export interface Heartbeat {
  workerId(): string;
  /** When the last beat reached the database (ms since the epoch). */
  lastBeatAt(): number;
  stop(): Promise<void>;
}

export interface HeartbeatHooks {
  onError: (error: unknown) => void;
  /** The row had been marked offline by another process and is online again. */
  onRevived?: () => void;
  /** After each beat (the worker also watches the others then). */
  onTick?: () => void;
}

/**
 * Registers the worker and advances its heartbeat every `intervalMs`. A worker
 * that was written off (its row marked offline after a missed heartbeat) comes
 * back under the same id, so the queue tasks named after it stay valid.
 */
export async function startHeartbeat(
  db: Db,
  identity: WorkerIdentity,
  intervalMs: number,
  hooks: HeartbeatHooks,
): Promise<Heartbeat> {
  const id = (await registerWorker(db, identity)).id;
  let lastBeatAt = Date.now();
  let inFlight: Promise<void> = Promise.resolve();
  const beat = async () => {
    try {
      if (!(await heartbeatWorker(db, id))) {
        if (!(await reviveWorker(db, id)))
          throw new Error(`worker row ${id} was deleted; restart this worker`);
        hooks.onRevived?.();
      }
      lastBeatAt = Date.now();
      hooks.onTick?.();
    } catch (error) {
      hooks.onError(error); // a database hiccup: try again on the next tick
    }
  };
  const timer = setInterval(() => {
    inFlight = beat();
  }, intervalMs);
  return {
    workerId: () => id,
    lastBeatAt: () => lastBeatAt,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
