// npm run -s bench:control-plane -- [--json] [--only=overhead,pipelined,dispatch,trace]
// The control plane's benchmark: the overhead of a call through the REST API,
// the queue and a worker over the engine's own time (`overhead`), and the queue
// libraries' dispatch latency (`dispatch`), an adapter's calls queued back to
// back against one at a time (`pipelined`); `trace`, not run by default, cuts
// one call into phases. Postgres: DATABASE_URL's server when set, else an
// embedded cluster; each section uses fresh databases and drops them. Progress
// goes to stderr; stdout gets one JSON object with --json, else a summary.
import { machineInfo } from "@opentinker/kernels";
import { BenchControlPlane } from "./control-plane.ts";
import { benchGraphileWorker, benchPgBoss } from "./dispatch.ts";
import { benchOverhead } from "./overhead.ts";
import { benchPipelined } from "./pipelined.ts";
import { type BenchServer, freshDatabase, openBenchServer } from "./postgres.ts";
import { readable } from "./report.ts";
import { progress } from "./stats.ts";
import { Teardown } from "./teardown.ts";
import { benchTrace } from "./trace.ts";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const sections = arg("only")?.split(",") ?? ["overhead", "pipelined", "dispatch"];

/** The target: a call's round trip over the engine's own time, p50 at 1 client. */
const TARGET_OVERHEAD_P50_MS = 15;
const WORKER = { concurrency: 16, capacity: 32 };
const OVERHEAD = { single: 200, clients: 20, perClient: 15 };
const TRACE_CALLS = 100;
const PIPELINED_CALLS = 40;
const DISPATCH = {
  graphileWorker: { jobs: 200, maxGapMs: 20 },
  // Polling: sends spread over a whole polling interval, so fewer of them.
  pgBoss: { jobs: 100, maxGapMs: 500 },
};

/** Runs a section if asked for, with its own teardown, run when it ends (and by the outer one on failure). */
async function section<T>(
  name: string,
  teardown: Teardown,
  run: (teardown: Teardown) => Promise<T>,
): Promise<T | undefined> {
  if (!sections.includes(name)) return undefined;
  const own = new Teardown();
  teardown.defer(name, () => own.run());
  try {
    return await run(own);
  } finally {
    await own.run();
  }
}

async function overhead(server: BenchServer, teardown: Teardown) {
  progress("starting the control plane (web process, worker)");
  const cp = await BenchControlPlane.start(server, teardown, { worker: WORKER });
  const result = await benchOverhead(cp, OVERHEAD, teardown);
  const singles = [result.sample.single, result.forwardBackward.single];
  return {
    worker: WORKER,
    ...result,
    target: {
      overheadP50Ms: TARGET_OVERHEAD_P50_MS,
      met: singles.every((r) => r.overhead.p50 <= TARGET_OVERHEAD_P50_MS),
    },
  };
}

async function pipelined(server: BenchServer, teardown: Teardown) {
  progress("starting the control plane (web process, worker)");
  const cp = await BenchControlPlane.start(server, teardown, { worker: WORKER });
  return benchPipelined(cp, PIPELINED_CALLS);
}

async function dispatch(server: BenchServer, teardown: Teardown) {
  const { graphileWorker: g, pgBoss: b } = DISPATCH;
  return {
    graphileWorker: await benchGraphileWorker(
      await freshDatabase(server, "graphile", teardown),
      g.jobs,
      g.maxGapMs,
    ),
    pgBoss: await benchPgBoss(await freshDatabase(server, "pgboss", teardown), b.jobs, b.maxGapMs),
  };
}

async function main() {
  const teardown = new Teardown();
  const interrupted = () => void teardown.run().finally(() => process.exit(130));
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    // CPU, flags, OpenBLAS; its loadAverage well above 0 means something else was running: the figures are not clean.
    const machine = { ...machineInfo(), node: process.versions.node };
    const server = await openBenchServer(process.env.DATABASE_URL || undefined, teardown);
    progress(`database: ${server.embedded ? "embedded Postgres" : "DATABASE_URL"}`);
    return {
      machine,
      database: server.embedded ? "embedded" : "DATABASE_URL",
      controlPlane: await section("overhead", teardown, (t) => overhead(server, t)),
      pipelined: await section("pipelined", teardown, (t) => pipelined(server, t)),
      dispatch: await section("dispatch", teardown, (t) => dispatch(server, t)),
      trace: await section("trace", teardown, (t) =>
        benchTrace(server, t, { worker: WORKER, calls: TRACE_CALLS }),
      ),
    };
  } finally {
    await teardown.run();
  }
}

export type BenchResult = Awaited<ReturnType<typeof main>>;

const started = performance.now();
main().then(
  (result) => {
    progress(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    process.stdout.write(
      process.argv.includes("--json") ? `${JSON.stringify(result)}\n` : `${readable(result)}\n`,
    );
    // Pools' idle timers would keep the process alive a while longer.
    process.exit(0);
  },
  (error: unknown) => {
    // fetch's "fetch failed" says why only in its cause (a reset, a refused connection).
    const cause = error instanceof Error && error.cause ? ` (cause: ${String(error.cause)})` : "";
    progress(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}${cause}`);
    process.exit(1);
  },
);
