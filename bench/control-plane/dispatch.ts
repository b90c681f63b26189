// Queue dispatch latency: from the enqueue's commit to an empty handler
// starting, for graphile-worker (LISTEN/NOTIFY pickup, what we use) and pg-boss
// (polling), each in a fresh database, jobs sent one at a time by a client
// separate from the worker (as the web process and a worker are).
import { createRequire } from "node:module";
import { quietQueueLogger } from "@opentinker/db";
import { makeWorkerUtils, run } from "graphile-worker";
import PgBoss from "pg-boss";
import { type Latency, latency, progress, sleep } from "./stats.ts";

const require = createRequire(import.meta.url);
const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;

const WARMUP = 10;
const START_TIMEOUT_MS = 10_000;
/** As the worker runs graphile-worker (src/queue.ts). */
const CONCURRENCY = 16;
const PG_BOSS_POLLING_S = 0.5;

export interface DispatchResult {
  library: string;
  version: string;
  pickup: string;
  latency: Latency;
}

/** The handler's side: resolves the sender's wait with the instant the handler started. */
class StartSignal {
  private started: ((at: number) => void) | null = null;

  next(): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("a job did not start in time")), START_TIMEOUT_MS);
      this.started = (at) => {
        clearTimeout(timer);
        resolve(at);
      };
    });
  }

  fire(): void {
    const at = performance.now();
    this.started?.(at);
    this.started = null;
  }
}

/**
 * Sends `jobs` jobs one at a time, each after a random pause in [0, maxGapMs)
 * (so that sends fall anywhere in a polling cycle), and times commit → start.
 */
async function oneAtATime(
  signal: StartSignal,
  send: () => Promise<unknown>,
  jobs: number,
  maxGapMs: number,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < WARMUP + jobs; i++) {
    await sleep(Math.random() * maxGapMs);
    const started = signal.next();
    await send();
    const committed = performance.now();
    const at = await started;
    if (i >= WARMUP) latencies.push(at - committed);
  }
  return latencies;
}

export async function benchGraphileWorker(url: string, jobs: number, maxGapMs: number) {
  progress(`dispatch: graphile-worker, ${jobs} jobs`);
  const signal = new StartSignal();
  const runner = await run({
    connectionString: url,
    concurrency: CONCURRENCY,
    maxPoolSize: CONCURRENCY,
    pollInterval: 2000,
    noHandleSignals: true,
    logger: quietQueueLogger,
    taskList: { bench: async () => signal.fire() },
  });
  const utils = await makeWorkerUtils({ connectionString: url, logger: quietQueueLogger });
  try {
    const latencies = await oneAtATime(signal, () => utils.addJob("bench", {}), jobs, maxGapMs);
    return {
      library: "graphile-worker",
      version: versionOf("graphile-worker"),
      pickup: "LISTEN/NOTIFY (pollInterval 2 s as a fallback)",
      latency: latency(latencies),
    } satisfies DispatchResult;
  } finally {
    await utils.release();
    await runner.stop();
  }
}

export async function benchPgBoss(url: string, jobs: number, maxGapMs: number) {
  progress(`dispatch: pg-boss, ${jobs} jobs`);
  const signal = new StartSignal();
  const worker = new PgBoss(url);
  const sender = new PgBoss(url);
  for (const boss of [worker, sender])
    boss.on("error", (error) => progress(`pg-boss: ${error instanceof Error ? error.message : error}`));
  try {
    await worker.start();
    await sender.start();
    await worker.createQueue("bench");
    await worker.work("bench", { pollingIntervalSeconds: PG_BOSS_POLLING_S }, async () => signal.fire());
    const latencies = await oneAtATime(signal, () => sender.send("bench", {}), jobs, maxGapMs);
    return {
      library: "pg-boss",
      version: versionOf("pg-boss"),
      pickup: `polling every ${PG_BOSS_POLLING_S} s (its minimum)`,
      latency: latency(latencies),
    } satisfies DispatchResult;
  } finally {
    await sender.stop({ graceful: false, wait: true });
    await worker.stop({ graceful: false, wait: true });
  }
}
