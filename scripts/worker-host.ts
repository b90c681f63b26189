// `npm run worker`: one worker on this host, for a host (or a Kubernetes pod)
// other than the one `npm start` runs on. It joins with DATABASE_URL and the
// store settings alone (OPENTINKER_STORE: the bucket every host shares) and is
// supervised as `npm start` supervises its own: a worker that dies once up is
// restarted with backoff, its rows released at once so its jobs resume on
// another worker. SIGTERM drains it, then stops this process.
import path from "node:path";
import { createDb, describeDatabaseUrl, inheritedEnv, releaseLostWorker } from "@opentinker/db";
import { ensureStarterModel } from "./base-models.ts";
import { REPO_ROOT, readClusterEnv } from "./env.ts";
import { spawnService } from "./processes.ts";
import { Supervised } from "./supervise.ts";

const say = (line: string) => console.log(`worker-host: ${line}`);

async function main(): Promise<void> {
  const env = readClusterEnv();
  await ensureStarterModel(env.OPENTINKER_DATA_DIR);
  const db = createDb(env.DATABASE_URL);
  say(`database: ${describeDatabaseUrl(env.DATABASE_URL)}`);
  // The worker reads the rest (store, capacity, heartbeat) itself; the data directory as resolved here.
  const childEnv = inheritedEnv({ OPENTINKER_DATA_DIR: env.OPENTINKER_DATA_DIR });
  let workerId: string | null = null;
  let stopping = false;
  const worker: Supervised = new Supervised(
    "worker",
    () =>
      spawnService(path.join(REPO_ROOT, "apps/worker/src/main.ts"), childEnv, (line) => {
        console.log(line);
        const ready = /^worker: registered as (\S+)/.exec(line);
        if (!ready?.[1]) return;
        workerId = ready[1];
        worker.markReady();
      }),
    {
      say,
      failedToStart: (reason) => {
        console.error(`worker-host: ${reason}; stopping`);
        void db.$disconnect().finally(() => process.exit(1));
      },
      // Its jobs go back to the queue and its adapters free up now, not after its heartbeat goes stale.
      afterExit: async () => {
        if (workerId) await releaseLostWorker(db, workerId);
      },
    },
  );
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: the worker drains`);
    const outcome = await worker.stop(env.WORKER_DRAIN_MS);
    // One that had to be killed could not release what it held: do it for it.
    if (outcome === "killed" && workerId) await releaseLostWorker(db, workerId).catch(() => {});
    await db.$disconnect();
    say(`stopped (worker ${outcome})`);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  worker.start();
}

main().catch((error: unknown) => {
  console.error(`worker-host: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
