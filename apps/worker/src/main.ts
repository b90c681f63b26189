// Worker process: registers with its capacity, heartbeats, and drains on SIGTERM.
// Task kinds (rollout, training, validation) arrive with the control-plane issue.
import { createDb, markWorkerOffline } from "@opentinker/db";
import { readWorkerEnv } from "./env.ts";
import { type Heartbeat, startHeartbeat } from "./heartbeat.ts";

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function main(): Promise<void> {
  const env = readWorkerEnv();
  const db = createDb(env.DATABASE_URL);
  let heartbeat: Heartbeat | undefined;
  let stopping = false;

  // Installed before anything starts, so a signal during start-up also drains.
  const drain = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`worker: ${signal}, draining`);
    try {
      if (heartbeat) {
        await heartbeat.stop();
        await markWorkerOffline(db, heartbeat.workerId());
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

  heartbeat = await startHeartbeat(
    db,
    { host: env.WORKER_HOST, pid: process.pid, capacity: env.WORKER_CAPACITY },
    env.WORKER_HEARTBEAT_MS,
    (error) => console.error(`worker: heartbeat failed: ${message(error)}`),
  );
  console.log(`worker: registered as ${heartbeat.workerId()} (capacity ${env.WORKER_CAPACITY})`);
}

main().catch((error: unknown) => {
  console.error(`worker: ${message(error)}`);
  process.exit(1);
});
