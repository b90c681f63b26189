// Server-side jobs on real worker processes: an RL job runs to the end and stores
// every step; killed mid-run, it resumes on another worker from its checkpoint
// with nothing applied twice, lost or duplicated.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("jobs");
  await cp.startWorker();
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

async function createRlJob(name: string, config: Record<string, unknown>) {
  const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name,
    baseModel: BASE,
    rank: 4,
  });
  const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
    name: `${name}-env`,
    kind: "BUILTIN",
    builtin: "arithmetic",
    config: { maxOperand: 5 },
  });
  const job = await cp.api<{ id: string; status: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId: adapter.body.id,
    environmentId: env.body.id,
    config,
  });
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return { adapterId: adapter.body.id, jobId: job.body.id };
}

const finished = (jobId: string) =>
  until(async () => {
    const job = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
    return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(job.status) ? job : undefined;
  }, `job ${jobId} to finish`);

async function expectCompleteHistory(jobId: string, steps: number, perStep: number) {
  for (let step = 0; step < steps; step++) {
    const rows = await cp.t.db.trajectory.findMany({ where: { jobId, step } });
    expect(rows, `trajectories of step ${step}`).toHaveLength(perStep);
    const rewards = await cp.t.db.metric.count({ where: { jobId, step, name: "reward/mean" } });
    expect(rewards, `reward/mean rows of step ${step}`).toBe(1);
  }
  expect(await cp.t.db.trajectory.count({ where: { jobId, step: { gte: steps } } })).toBe(0);
}

describe("server-side RL jobs", () => {
  it("run to the end, storing each step's trajectories and metrics, and keep only the final snapshot and checkpoint", async () => {
    const { adapterId, jobId } = await createRlJob("rl-basic", {
      steps: 3,
      groupsPerStep: 2,
      groupSize: 4,
      seed: 5,
    });
    const job = await finished(jobId);
    expect(job.error).toBeNull();
    expect(job.status).toBe("SUCCEEDED");
    expect(job.step).toBe(3);
    await expectCompleteHistory(jobId, 3, 8);
    const trajectories = await cp.api<{ tokens: number[]; mask: number[]; snapshotVersion: number }[]>(
      team.key,
      "GET",
      `/v1/jobs/${jobId}/trajectories?step=1`,
    );
    expect(trajectories.status).toBe(200);
    expect(trajectories.body[0]?.tokens.length).toBe(trajectories.body[0]?.mask.length);
    expect(trajectories.body[0]?.mask).toContain(1);
    // keep-final: one snapshot (loadable) and one checkpoint remain.
    const versions = await cp.api<{ handle: string }[]>(
      team.key,
      "GET",
      `/v1/adapters/${adapterId}/versions`,
    );
    expect(versions.body).toHaveLength(1);
    const sample = await cp.call<{ sequences: unknown[] }>(team.key, "/v1/sampling/sample", {
      policy: { handle: versions.body[0]?.handle },
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      params: { maxTokens: 2, seed: 1 },
    });
    expect(sample.sequences).toHaveLength(1);
    expect(await cp.t.db.checkpoint.count({ where: { jobId } })).toBe(1);
  }, 120_000);

  it("resume on another worker from the last checkpoint when their worker is killed", async () => {
    const steps = 10;
    const { adapterId, jobId } = await createRlJob("rl-fault", {
      steps,
      groupsPerStep: 2,
      groupSize: 4,
      seed: 9,
      checkpointEvery: 2,
      retention: "keep-all",
      // Every step then applies an optimizer step, so a step applied twice would show.
      dropConstantGroups: false,
    });
    const running = await until(async () => {
      const job = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
      return job.status === "RUNNING" && job.step >= 3 && job.workerId ? job : undefined;
    }, "the job to pass step 3");
    const victim = cp.workers.find((w) => w.id === running.workerId);
    expect(victim).toBeDefined();
    victim?.child.kill("SIGKILL");
    const job = await finished(jobId);
    expect(job.error).toBeNull();
    expect(job.status).toBe("SUCCEEDED");
    expect(job.workerId).not.toBe(running.workerId);
    await expectCompleteHistory(jobId, steps, 8);
    // Snapshot versions are contiguous from 1, whatever was redone.
    const versions = (
      await cp.t.db.snapshot.findMany({ where: { adapterId }, orderBy: { version: "asc" } })
    ).map((s) => s.version);
    expect(versions).toEqual(versions.map((_, i) => i + 1));
    // No optimizer step applied twice: the trainer's step is the number of trained
    // steps in the stored history.
    const trained = await cp.t.db.metric.count({ where: { jobId, name: "step/value" } });
    expect(trained).toBe(steps);
    const final = await cp.t.db.checkpoint.findFirstOrThrow({ where: { jobId }, orderBy: { step: "desc" } });
    expect(final.step).toBe(trained);
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).step).toBe(trained);
  }, 180_000);
});
