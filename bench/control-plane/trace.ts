// Where one call's time goes (`--only=trace`): the web process and the worker run
// with trace-hook.ts, which records when each Postgres query was sent and
// answered and each engine call; calls made one at a time are then cut into
// sequential phases that add up to the round trip, with the CPU time each
// process spends per call.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { BenchControlPlane, type CallTiming } from "./control-plane.ts";
import { cpuPerCall } from "./cpu.ts";
import type { BenchServer } from "./postgres.ts";
import { latency, loops, progress, round } from "./stats.ts";
import { Teardown } from "./teardown.ts";
import { inProcessService, sampleWorkload, trainingWorkload, type Workload } from "./workloads.ts";

export interface TraceEvent {
  kind: "query" | "engine";
  /** The query's first characters (prefixed by its prepared name), or the engine method. */
  sql: string;
  /** Epoch milliseconds. */
  start: number;
  end: number;
}

/** One call's phases, in order: they add up to its round trip. */
const PHASES = [
  "httpInToEnqueue",
  "enqueue",
  "enqueueToJobFetched",
  "jobFetchedToClaim",
  "claim",
  "claimToEngine",
  "engine",
  "engineToFinish",
  "finishAndNotify",
  "notifyToClient",
] as const;
type Phases = Record<(typeof PHASES)[number], number>;

const after = (list: TraceEvent[], t: number, match: (e: TraceEvent) => boolean) =>
  list.find((e) => e.start >= t && match(e));

/**
 * Cut by the hot path's statements: the worker's claim, graphile-worker's
 * `get_job` before it, the engine call and the finish with its NOTIFY; the
 * enqueue is the web process's last statement before the claim (its text differs
 * by call kind, and once matched one that had been rewritten, cutting nothing). A
 * call that took another path (e.g. placing its adapter) is skipped.
 */
function phasesOf(call: CallTiming, web: TraceEvent[], worker: TraceEvent[]): Phases | null {
  const claim = after(worker, call.sent, (e) => e.sql.includes("SET status = 'RUNNING'"));
  const enqueue =
    claim && web.findLast((e) => e.kind === "query" && e.start >= call.sent && e.end <= claim.start);
  const fetched = claim && worker.findLast((e) => e.sql.includes("get_job") && e.end <= claim.start);
  const engine = claim && after(worker, claim.end, (e) => e.kind === "engine");
  const finish = engine && after(worker, engine.end, (e) => e.sql.startsWith("WITH done AS"));
  if (!enqueue || !claim || !fetched || !engine || !finish || finish.end > call.done) return null;
  return {
    httpInToEnqueue: enqueue.start - call.sent,
    enqueue: enqueue.end - enqueue.start,
    enqueueToJobFetched: fetched.end - enqueue.end,
    jobFetchedToClaim: claim.start - fetched.end,
    claim: claim.end - claim.start,
    claimToEngine: engine.start - claim.end,
    engine: engine.end - engine.start,
    engineToFinish: finish.start - engine.end,
    finishAndNotify: finish.end - finish.start,
    notifyToClient: call.done - finish.end,
  };
}

/** What a process did during one call: its queries (first words) and engine calls. */
function eventsOf(call: CallTiming, events: TraceEvent[]): TraceEvent[] {
  return events.filter((e) => e.start >= call.sent && e.start <= call.done);
}

async function traceWorkload(cp: BenchControlPlane, workload: Workload, calls: number) {
  progress(`trace: ${workload.name}, ${calls} calls one at a time`);
  await loops(1, 10, (c) => workload.viaApi(c));
  const { result: timings, cpuMsPerCall } = await cpuPerCall(cp, calls, () =>
    loops(1, calls, (c) => workload.viaApi(c)),
  );
  return { name: workload.name, timings, cpuMsPerCall };
}

export async function benchTrace(
  server: BenchServer,
  teardown: Teardown,
  options: { worker: { concurrency: number; capacity: number }; calls: number },
) {
  const traceDir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-trace-"));
  teardown.defer("remove the traces", () => rm(traceDir, { recursive: true, force: true }));
  const section = new Teardown();
  teardown.defer("traced control plane", () => section.run());
  let runs: Awaited<ReturnType<typeof traceWorkload>>[];
  let pids: { web: number; worker: number };
  try {
    const cp = await BenchControlPlane.start(server, section, { worker: options.worker, traceDir });
    pids = cp.pids;
    const service = await inProcessService(cp, section);
    runs = [
      await traceWorkload(cp, await sampleWorkload(cp, service), options.calls),
      await traceWorkload(cp, await trainingWorkload(cp, service, 1), options.calls),
    ];
  } finally {
    // The processes write their traces as they exit.
    await section.run();
  }
  const traces = await readTraces(traceDir);
  const web = traces.get(pids.web) ?? [];
  const worker = traces.get(pids.worker) ?? [];
  return Object.fromEntries(
    runs.map((run) => {
      const phases = run.timings.flatMap((t) => phasesOf(t, web, worker) ?? []);
      const roundTrip = latency(run.timings.map((t) => t.done - t.sent));
      return [
        run.name,
        {
          roundTrip,
          traced: phases.length,
          /** Median of each phase (so they need not add up exactly to the median round trip). */
          phasesP50:
            phases.length === 0
              ? null
              : Object.fromEntries(PHASES.map((p) => [p, latency(phases.map((x) => x[p])).p50])),
          queriesPerCall: {
            web: latency(run.timings.map((t) => eventsOf(t, web).length)).p50,
            worker: latency(
              run.timings.map((t) => eventsOf(t, worker).filter((e) => e.kind === "query").length),
            ).p50,
          },
          /** One call's statements, in order, with their round trips (ms) as the process saw them. */
          example: Object.fromEntries(
            (["web", "worker"] as const).map((role) => {
              const call = run.timings[Math.floor(run.timings.length / 2)] as CallTiming;
              const events = eventsOf(call, role === "web" ? web : worker);
              return [role, events.map((e) => `${round(e.end - e.start)} ${e.sql.slice(0, 60)}`)];
            }),
          ),
          cpuMsPerCall: run.cpuMsPerCall,
        },
      ];
    }),
  );
}

async function readTraces(dir: string): Promise<Map<number, TraceEvent[]>> {
  const byPid = new Map<number, TraceEvent[]>();
  for (const file of await readdir(dir)) {
    const events = JSON.parse(await readFile(path.join(dir, file), "utf8")) as TraceEvent[];
    byPid.set(
      Number.parseInt(file, 10),
      events.sort((a, b) => a.start - b.start),
    );
  }
  return byPid;
}
