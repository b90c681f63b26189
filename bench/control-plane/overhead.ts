// Control-plane overhead: a call's round trip through the REST API, queue and
// worker, minus the engine's own time for the same work run in-process on the
// same model, at 1 client and at many clients issuing calls back to back.
import type { BenchControlPlane, RequestPhases } from "./control-plane.ts";
import { type CpuSnapshot, cpuPerCall } from "./cpu.ts";
import { type Latency, latency, loops, progress, round } from "./stats.ts";
import type { Teardown } from "./teardown.ts";
import { inProcessService, sampleWorkload, trainingWorkload, type Workload } from "./workloads.ts";

export interface OverheadRun {
  clients: number;
  /** POST the call, then POST /futures/{id}/wait until it has finished. */
  roundTrip: Latency;
  /** The first POST alone (validated, enqueued, future returned). */
  accept: Latency;
  /** The same work in-process, at the same concurrency. */
  engine: Latency;
  /** Round trip minus engine, percentile by percentile (ms). */
  overhead: { p50: number; p95: number };
  /** Medians of each call's phases (ms), from its Request row's timestamps; null if none could be read. */
  phases: Record<keyof RequestPhases, number> | null;
  /** CPU ms per call of each process through the API; `other`: the rest of the machine (contention). */
  cpuMsPerCall: CpuSnapshot | null;
}

export interface OverheadConfig {
  /** Calls of the 1-client run. */
  single: number;
  /** Concurrent clients of the loaded run, and calls each makes. */
  clients: number;
  perClient: number;
}

async function run(
  cp: BenchControlPlane,
  workload: Workload,
  clients: number,
  perClient: number,
): Promise<OverheadRun> {
  progress(`${workload.name}: ${clients} client(s) × ${perClient} calls`);
  const { result: calls, cpuMsPerCall } = await cpuPerCall(cp, clients * perClient, () =>
    loops(clients, perClient, (c) => workload.viaApi(c)),
  );
  const engine = latency(await loops(clients, perClient, (c) => workload.inProcess(c)));
  const roundTrip = latency(calls.map((c) => c.done - c.sent));
  const phases = await cp.phases(calls);
  const median = (key: keyof RequestPhases) => latency(phases.map((p) => p[key])).p50;
  return {
    clients,
    roundTrip,
    accept: latency(calls.map((c) => c.accepted - c.sent)),
    engine,
    overhead: { p50: round(roundTrip.p50 - engine.p50), p95: round(roundTrip.p95 - engine.p95) },
    phases:
      phases.length === 0
        ? null
        : {
            webToInsert: median("webToInsert"),
            insertToClaim: median("insertToClaim"),
            claimToFinish: median("claimToFinish"),
            finishToClient: median("finishToClient"),
          },
    cpuMsPerCall,
  };
}

async function measure(cp: BenchControlPlane, workload: Workload, config: OverheadConfig) {
  // Warm-up: JIT, connection pools, the sampler's and adapters' first use.
  await loops(1, 10, (c) => workload.viaApi(c));
  await loops(config.clients, 2, (c) => workload.viaApi(c));
  await loops(1, 10, (c) => workload.inProcess(c));
  await loops(config.clients, 2, (c) => workload.inProcess(c));
  return {
    single: await run(cp, workload, 1, config.single),
    concurrent: await run(cp, workload, config.clients, config.perClient),
  };
}

export async function benchOverhead(cp: BenchControlPlane, config: OverheadConfig, teardown: Teardown) {
  const service = await inProcessService(cp, teardown);
  return {
    sample: await measure(cp, await sampleWorkload(cp, service), config),
    forwardBackward: await measure(cp, await trainingWorkload(cp, service, config.clients), config),
  };
}
