// Control-plane overhead: a call's round trip through the REST API, queue and
// worker, minus the engine's own time for the same work run in-process on the
// same model, at 1 client and at many clients issuing calls back to back.
import type { BenchControlPlane, RequestPhases } from "./control-plane.ts";
import { type CpuSnapshot, cpuPerCall } from "./cpu.ts";
import { type Latency, latency, loops, progress } from "./stats.ts";
import type { Teardown } from "./teardown.ts";
import { inProcessService, sampleWorkload, trainingWorkload, type Workload } from "./workloads.ts";

export interface OverheadRun {
  clients: number;
  /** POST the call, then POST /futures/{id}/wait until it has finished. */
  roundTrip: Latency;
  /** The first POST alone (validated, enqueued, future returned). */
  accept: Latency;
  /** The same work in-process, each call paired with one through the API. */
  engine: Latency;
  /** Per pair, the API call's round trip minus its in-process twin's time: percentiles of those samples (ms). */
  overhead: Latency;
  /** Medians of each call's phases (ms), from its Request row's timestamps; null if none could be read. */
  phases: Record<keyof RequestPhases, number> | null;
  /**
   * CPU ms per pair (one call through the API, its twin in-process) of each
   * process; `bench` includes the in-process twin; `other`: the rest of the machine (contention).
   */
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
  progress(`${workload.name}: ${clients} client(s) × ${perClient} pairs of calls`);
  // Each client alternates a call through the API with the same call in-process
  // (A B, B A, A B, …), so each overhead sample pairs two calls made moments apart
  // under the same load, and its percentiles are those of real per-call overheads.
  const turns = new Array<number>(clients).fill(0);
  const { result: pairs, cpuMsPerCall } = await cpuPerCall(cp, clients * perClient, () =>
    loops(clients, perClient, async (c) => {
      turns[c] = (turns[c] ?? 0) + 1;
      if ((turns[c] as number) % 2 === 1) {
        const api = await workload.viaApi(c);
        return { api, engineMs: await workload.inProcess(c) };
      }
      const engineMs = await workload.inProcess(c);
      return { api: await workload.viaApi(c), engineMs };
    }),
  );
  const calls = pairs.map((p) => p.api);
  const roundTrip = latency(calls.map((c) => c.done - c.sent));
  const phases = await cp.phases(calls);
  const median = (key: keyof RequestPhases) => latency(phases.map((p) => p[key])).p50;
  return {
    clients,
    roundTrip,
    accept: latency(calls.map((c) => c.accepted - c.sent)),
    engine: latency(pairs.map((p) => p.engineMs)),
    overhead: latency(pairs.map((p) => p.api.done - p.api.sent - p.engineMs)),
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
