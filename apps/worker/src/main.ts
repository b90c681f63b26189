// Worker process: registers with its capacity, loads the base models, runs the
// queue's tasks (training calls of adapters placed here, sampling calls, server-
// side jobs), heartbeats, releases lost workers' work, and drains on SIGTERM.
import {
  createDb,
  markWorkerOffline,
  reapLostWorkers,
  releaseWorker,
  staleAfterMs,
  tasks,
} from "@opentinker/db";
import { selectBackend, setKernelThreads } from "@opentinker/kernels";
import { openStore, readStoreEnv } from "@opentinker/store";
import type { Runner, TaskList } from "graphile-worker";
import { adapterMemoryBytes, samplerBudgets, toMiB } from "./budgets.ts";
import { EngineHost } from "./engine-host.ts";
import { readWorkerEnv } from "./env.ts";
import { expirySweeper } from "./expiry.ts";
import { startHealthServer } from "./health.ts";
import { type Heartbeat, startHeartbeat } from "./heartbeat.ts";
import { FollowUps, startQueue } from "./queue.ts";
import { jobTask } from "./tasks/job.ts";
import { samplingTask } from "./tasks/sampling.ts";
import { trainingTask } from "./tasks/training.ts";

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function main(): Promise<void> {
  const env = readWorkerEnv();
  // First, so a device it cannot use stops it before it loads anything.
  const { backend, fallback } = selectBackend(env.WORKER_DEVICE);
  if (fallback) console.log(`worker: ${fallback}`);
  const db = createDb(env.DATABASE_URL);
  let heartbeat: Heartbeat | undefined;
  let runner: Runner | undefined;
  let stopping = false;

  // Installed before anything starts, so a signal during start-up also drains.
  const drain = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`worker: ${signal}, draining`);
    try {
      // Running calls finish; a server-side job stops within its step and goes back to the queue.
      host.drain();
      await runner?.stop();
      if (heartbeat) {
        await heartbeat.stop();
        await markWorkerOffline(db, heartbeat.workerId());
        // Its adapters move to other workers from their last checkpoints.
        await releaseWorker(db, heartbeat.workerId(), []);
      }
      await db.$disconnect();
      process.exit(0);
    } catch (error) {
      console.error(`worker: drain failed: ${message(error)}`);
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void drain("SIGTERM"));
  process.on("SIGINT", () => void drain("SIGINT"));
  if (env.WORKER_HEALTH_PORT !== undefined)
    await startHealthServer(env.WORKER_HEALTH_PORT, env.WORKER_HEALTH_HOST, staleAfterMs(), () => ({
      workerId: heartbeat?.workerId() ?? null,
      lastBeatAt: heartbeat?.lastBeatAt() ?? null,
      draining: stopping,
    }));

  setKernelThreads(env.WORKER_KERNEL_THREADS);
  // Downloaded snapshots and checkpoints stay on local disk (within a budget) when the store is remote.
  const store = await openStore(readStoreEnv(), { dataDir: env.OPENTINKER_DATA_DIR, cache: true });
  const budgets = samplerBudgets(env, backend.device.freeBytes);
  const host = new EngineHost(db, store, env.OPENTINKER_REMOTE_ENV_HOSTS, budgets, backend);
  const bases = await host.loadBases((line) => console.error(line));
  const sweepExpired = expirySweeper(db, host.store);
  heartbeat = await startHeartbeat(
    db,
    {
      host: env.WORKER_HOST,
      pid: process.pid,
      capacity: env.WORKER_CAPACITY,
      loadedModels: bases.map((b) => b.name),
      device: backend.device.name,
      deviceDescription: backend.device.description,
      deviceMemoryMiB: toMiB(backend.device.totalBytes),
      kvCacheMiB: toMiB(budgets.kvCacheBytes),
      policyPoolMiB: toMiB(budgets.policyBytes),
      adapterMemoryMiB: toMiB(adapterMemoryBytes(env, backend.device.freeBytes)),
    },
    env.WORKER_HEARTBEAT_MS,
    {
      onError: (error) => console.error(`worker: heartbeat failed: ${message(error)}`),
      // Written off by the others (e.g. a long stall): what it held was released.
      onRevived: () => host.releaseAll(),
      onTick: () => {
        void reapLostWorkers(db).catch((error) => console.error(`worker: reaping failed: ${message(error)}`));
        void sweepExpired().catch((error) =>
          console.error(`worker: deleting expired weights failed: ${message(error)}`),
        );
      },
    },
  );
  const workerId = heartbeat.workerId();
  const followUps = new FollowUps();
  const taskList: TaskList = {
    [tasks.train(workerId)]: trainingTask(db, host, workerId, followUps),
    [tasks.job]: jobTask(db, host, workerId),
  };
  for (const base of bases) taskList[tasks.sample(base.id)] = samplingTask(db, host, base.id);
  if (stopping) return;
  runner = await startQueue(db, {
    url: env.DATABASE_URL,
    workerId,
    concurrency: env.WORKER_CONCURRENCY,
    pollIntervalMs: env.WORKER_POLL_INTERVAL_MS,
    taskList,
    followUps,
  });
  console.log(
    `worker: registered as ${workerId} (${backend.device.name}: ${backend.device.description}; capacity ${env.WORKER_CAPACITY}; base models: ${bases.map((b) => b.name).join(", ") || "none"})`,
  );
}

main().catch((error: unknown) => {
  console.error(`worker: ${message(error)}`);
  process.exit(1);
});
