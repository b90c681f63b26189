// The time from a worker's death to its adapter serving again on another
// worker: sampling a published version (any worker serving the base model
// takes it, loading the snapshot from the bucket) and training (the adapter
// re-placed from its last checkpoint in the bucket). Two deaths: the worker
// process dies under `npm run worker`, which releases what it held at once;
// the whole host dies, and the others release it once its heartbeat is
// WORKER_STALE_AFTER_MS old.

import { median } from "../../packages/engine/bench/timing.ts";
import type { BenchServer } from "../control-plane/postgres.ts";
import { killGroup, type Service } from "../control-plane/services.ts";
import { epochMs, progress, round } from "../control-plane/stats.ts";
import type { Teardown } from "../control-plane/teardown.ts";
import { BASE, Cluster, DATUM } from "./cluster.ts";

export interface FailoverOptions {
  rounds: number;
  heartbeatMs: number;
  staleAfterMs: number;
}

type Death = "worker" | "host";

export async function benchFailover(server: BenchServer, options: FailoverOptions, teardown: Teardown) {
  const cluster = await Cluster.start(server, teardown, {
    WORKER_HEARTBEAT_MS: String(options.heartbeatMs),
    WORKER_STALE_AFTER_MS: String(options.staleAfterMs),
  });
  const web = (await cluster.startWeb()).ready;
  const hosts = new Map<string, Service>();
  for (const name of ["host-1", "host-2"]) hosts.set(name, await cluster.startWorkerHost(name));
  const samples: Record<Death, { sample: number[]; train: number[] }> = {
    worker: { sample: [], train: [] },
    host: { sample: [], train: [] },
  };
  for (let r = 0; r < options.rounds * 2; r++) {
    const death: Death = r % 2 === 0 ? "worker" : "host";
    progress(`failover: round ${r + 1}/${options.rounds * 2} (the ${death} dies)`);
    const adapter = (
      await cluster.post<{ id: string }>(web, "/v1/adapters", {
        name: `failover-${r}`,
        baseModel: BASE,
        rank: 8,
      })
    ).body;
    const adapterId = adapter.id;
    await cluster.mustCall(web, "/v1/training/forward-backward", {
      adapterId,
      data: [DATUM],
      lossFn: "cross_entropy",
    });
    await cluster.mustCall(web, "/v1/training/optim-step", { adapterId, adam: { learningRate: 0.01 } });
    await cluster.mustCall(web, "/v1/training/save-state", { adapterId, name: "checkpoint" });
    const { handle } = await cluster.mustCall<{ handle: string }>(
      web,
      "/v1/training/save-weights-for-sampler",
      {
        adapterId,
      },
    );
    const holder = await cluster.db.adapter.findUniqueOrThrow({
      where: { id: adapterId },
      select: { worker: { select: { id: true, host: true, pid: true } } },
    });
    const worker = holder.worker;
    if (!worker) throw new Error("the adapter was not placed");
    const killedAt = epochMs();
    if (death === "worker") process.kill(worker.pid, "SIGKILL");
    else await killGroup(hosts.get(worker.host) as Service);
    const [sample, train] = await Promise.all([
      cluster.until(killedAt, () =>
        cluster.call(web, "/v1/sampling/sample", {
          policy: { handle },
          prompt: { chunks: [{ type: "encoded_text", tokens: [10, 20] }] },
          params: { maxTokens: 4, seed: 1 },
        }),
      ),
      cluster.until(killedAt, () =>
        cluster.call(web, "/v1/training/forward-backward", {
          adapterId,
          data: [DATUM],
          lossFn: "cross_entropy",
        }),
      ),
    ]);
    samples[death].sample.push(sample);
    samples[death].train.push(train);
    // Two workers again before the next round.
    if (death === "host") hosts.set(worker.host, await cluster.startWorkerHost(worker.host));
    await cluster.until(epochMs(), async () => {
      const online = await cluster.db.worker.count({ where: { status: "ONLINE" } });
      return online === 2 ? { ok: true } : { ok: false, error: `${online} workers online` };
    });
  }
  const summary = (values: number[]) => ({
    medianMs: round(median(values)),
    samplesMs: values.map((v) => round(v)),
  });
  return {
    heartbeatMs: options.heartbeatMs,
    staleAfterMs: options.staleAfterMs,
    workerDiesUnderSupervisor: {
      sampleServing: summary(samples.worker.sample),
      trainingServing: summary(samples.worker.train),
    },
    hostDies: { sampleServing: summary(samples.host.sample), trainingServing: summary(samples.host.train) },
  };
}
