// `npm start`'s shutdown, one line per stage: the web process and the worker
// drain side by side, what a killed worker held is released, then the embedded
// database stops (last, because the others drain into it).
import { type DatabaseServer, type Db, releaseLostWorker } from "@opentinker/db";
import type { StopOutcome } from "./processes.ts";
import type { Supervised } from "./supervise.ts";

/** What runs once the database is up; stopped in reverse on Ctrl-C or a failed start. */
export interface Services {
  db: Db | null;
  web: Supervised | null;
  worker: Supervised | null;
  /** The worker process's row, from its "registered as" line. */
  workerId: string | null;
}

type Say = (line: string) => void;

const since = (startedAt: number) => `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;

function describeStop(name: string, outcome: StopOutcome, took: string): string {
  if (outcome === "killed") return `${name} process did not stop in time; killed it (${took})`;
  if (outcome === "not running") return `${name} process was not running`;
  return `${name} process stopped (${took})`;
}

async function stopService(service: Supervised | null, say: Say): Promise<void> {
  if (!service) return;
  const startedAt = Date.now();
  const outcome = await service.stop();
  say(describeStop(service.name, outcome, since(startedAt)));
}

export async function stopServices(services: Services, say: Say): Promise<void> {
  await Promise.all([stopService(services.web, say), stopService(services.worker, say)]);
  // A worker that had to be killed could not release what it held: do it for it.
  if (services.db && services.workerId)
    await releaseLostWorker(services.db, services.workerId).catch(() => {});
  await services.db?.$disconnect();
}

export async function stopDatabase(server: DatabaseServer, say: Say): Promise<void> {
  if (!server.embedded) return say("database: left running (it is DATABASE_URL's)");
  const startedAt = Date.now();
  await server.stop();
  say(`database: embedded Postgres stopped (${since(startedAt)})`);
}
