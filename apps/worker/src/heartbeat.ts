import { type Db, heartbeatWorker, registerWorker } from "@opentinker/db";

export interface WorkerIdentity {
  host: string;
  pid: number;
  capacity: number;
}

export interface Heartbeat {
  /** The id of the worker row, which changes if the worker had to re-register. */
  workerId(): string;
  stop(): Promise<void>;
}

/**
 * Registers the worker and advances its heartbeat every `intervalMs`. A worker
 * whose row vanished or was marked offline (e.g. by the scheduler after a missed
 * heartbeat) registers afresh instead of silently beating for nobody.
 */
export async function startHeartbeat(
  db: Db,
  identity: WorkerIdentity,
  intervalMs: number,
  onError: (error: unknown) => void,
): Promise<Heartbeat> {
  let id = (await registerWorker(db, identity)).id;
  let inFlight: Promise<void> = Promise.resolve();
  const beat = async () => {
    try {
      if (!(await heartbeatWorker(db, id))) id = (await registerWorker(db, identity)).id;
    } catch (error) {
      onError(error); // a database hiccup: try again on the next tick
    }
  };
  const timer = setInterval(() => {
    inFlight = beat();
  }, intervalMs);
  return {
    workerId: () => id,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
