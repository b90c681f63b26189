// Quotas, cancellation and draining: limits answered with a clear error, a
// cancelled job stops and releases its adapter, a SIGTERMed worker hands its job
// to another worker after checkpointing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("life");
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

async function rlJob(name: string, steps: number) {
  const { adapterId, environmentId } = await cp.arithmeticSetUp(team, name);
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId,
    environmentId,
    config: { steps, groupsPerStep: 2, groupSize: 4, dropConstantGroups: false },
  });
  return { adapterId, environmentId, jobId: job.body.id, status: job.status };
}

const jobRow = (id: string) => cp.t.db.job.findUniqueOrThrow({ where: { id } });

describe("workers", () => {
  it("are listed with the device each computes on and its memory", async () => {
    const { status, body: workers } = await cp.api<
      {
        device: string;
        deviceDescription: string;
        deviceMemoryMiB: number | null;
        kvCacheMiB: number | null;
        policyPoolMiB: number | null;
        adapterMemoryMiB: number | null;
        placedAdapterBytes: number;
      }[]
    >(team.key, "GET", "/v1/workers");
    expect(status).toBe(200);
    expect(workers.length).toBeGreaterThan(0);
    for (const w of workers) {
      expect(w.device).toBe("cpu");
      expect(w.deviceDescription).toMatch(/\d+ cores$/);
      expect(w.deviceMemoryMiB).toBeGreaterThan(0);
      expect(w.kvCacheMiB).toBeGreaterThan(0);
      expect(w.policyPoolMiB).toBeGreaterThan(0);
      expect(w.adapterMemoryMiB).toBeGreaterThan(0);
      expect(w.placedAdapterBytes).toBeGreaterThanOrEqual(0);
    }
  });

  it("charge each adapter its training state, from the base model's registered sizes", async () => {
    // A team of its own: the quota test below counts this file's team's adapters.
    const sizing = await cp.team("sizing");
    const created = await cp.api<{ id: string }>(sizing.key, "POST", "/v1/adapters", {
      name: "sized",
      baseModel: BASE,
      rank: 4,
    });
    expect(created.status).toBe(200);
    const row = await cp.t.db.adapter.findUniqueOrThrow({ where: { id: created.body.id } });
    const base = await cp.t.db.baseModel.findUniqueOrThrow({ where: { id: row.baseModelId } });
    const perRank = (base.attnParamsPerRank ?? 0) + (base.mlpParamsPerRank ?? 0);
    expect(perRank).toBeGreaterThan(0);
    // f32 weights, gradient and two AdamW moments of rank-4 attention and MLP adapters.
    expect(row.stateBytes).toBe(16 * 4 * perRank);
  });
});

describe("quotas", () => {
  it("refuse the adapter, job and queued-request over the team's limits with 429 naming the quota", async () => {
    await cp.t.db.team.update({
      where: { id: team.id },
      data: { maxAdapters: 1, maxQueuedRequests: 0, maxConcurrentJobs: 0 },
    });
    try {
      const first = await cp.api(team.key, "POST", "/v1/adapters", { name: "q1", baseModel: BASE, rank: 2 });
      expect(first.status).toBe(200);
      const second = await cp.api<{ message: string }>(team.key, "POST", "/v1/adapters", {
        name: "q2",
        baseModel: BASE,
        rank: 2,
      });
      expect(second.status).toBe(429);
      expect(second.body.message).toMatch(/maxAdapters is 1/);
      const adapterId = (first.body as { id: string }).id;
      const queued = await cp.api<{ message: string }>(team.key, "POST", "/v1/training/optim-step", {
        adapterId,
      });
      expect(queued.status).toBe(429);
      expect(queued.body.message).toMatch(/maxQueuedRequests is 0/);
      const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
        name: "q-env",
        kind: "BUILTIN",
        builtin: "arithmetic",
      });
      const job = await cp.api<{ message: string }>(team.key, "POST", "/v1/jobs", {
        kind: "RL",
        adapterId,
        environmentId: env.body.id,
        config: { steps: 1 },
      });
      expect(job.status).toBe(429);
      expect(job.body.message).toMatch(/maxConcurrentJobs is 0/);
      await cp.api(team.key, "DELETE", `/v1/adapters/${adapterId}`);
    } finally {
      await cp.t.db.team.update({
        where: { id: team.id },
        data: { maxAdapters: 100, maxQueuedRequests: 1000, maxConcurrentJobs: 4 },
      });
    }
  });
});

describe("cancellation", () => {
  it("stops a running job at its next step, releases its adapter and keeps its final snapshot loadable", async () => {
    const { adapterId, jobId } = await rlJob("cancel-me", 200);
    await until(async () => ((await jobRow(jobId)).step >= 2 ? true : undefined), "two steps");
    const cancel = await cp.api<{ cancelRequested: boolean }>(team.key, "POST", `/v1/jobs/${jobId}/cancel`);
    expect(cancel.body.cancelRequested).toBe(true);
    const done = await until(async () => {
      const row = await jobRow(jobId);
      return row.finishedAt ? row : undefined;
    }, "the job to stop");
    expect(done.status).toBe("CANCELLED");
    expect(done.step).toBeLessThan(200);
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).workerId).toBeNull();
    const versions = await cp.api<{ handle: string }[]>(
      team.key,
      "GET",
      `/v1/adapters/${adapterId}/versions`,
    );
    expect(versions.body).toHaveLength(1);
    // The adapter is free again for direct calls.
    const saved = await cp.call<{ version: number }>(team.key, "/v1/training/save-weights-for-sampler", {
      adapterId,
    });
    expect(saved.version).toBeGreaterThan(1);
  }, 120_000);
});

describe("draining", () => {
  it("a SIGTERMed worker checkpoints its job and another worker finishes it", async () => {
    const steps = 60;
    const { jobId } = await rlJob("drain-me", steps);
    const first = await until(async () => {
      const row = await jobRow(jobId);
      return row.status === "RUNNING" && row.step >= 2 && row.workerId ? row : undefined;
    }, "the job to run");
    const spare = await cp.startWorker();
    const victim = cp.workers.find((w) => w.id === first.workerId);
    victim?.child.kill("SIGTERM");
    expect(await victim?.exited).toBe(0);
    const done = await until(
      async () => {
        const row = await jobRow(jobId);
        return row.finishedAt ? row : undefined;
      },
      "the job to finish",
      120_000,
    );
    expect(done.error).toBeNull();
    expect(done.status).toBe("SUCCEEDED");
    expect(done.workerId).toBe(spare.id);
    for (let step = 0; step < steps; step++)
      expect(await cp.t.db.metric.count({ where: { jobId, step, name: "reward/mean" } })).toBe(1);
    expect(await cp.t.db.metric.count({ where: { jobId, name: "step/value" } })).toBe(steps);
    expect(victim?.output.join("\n")).toMatch(/worker: SIGTERM, draining/);
  }, 180_000);
});
