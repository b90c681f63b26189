// Server-side jobs on real worker processes: an RL job runs to the end and stores
// every step; killed mid-run, it resumes on another worker from its checkpoint
// with nothing applied twice, lost or duplicated.
import { createOpenTinkerClient } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";
import { countingReset, HOLD, type RemoteEnv, startRemoteEnv } from "./remote-env-server.ts";

let cp: ControlPlane;
let team: Team;
let gate: Gate;

/**
 * A remote environment whose steps can be held: once `holdAfter` steps have
 * been answered, later ones wait until `open()`, so a job can be caught at a
 * chosen point of a chosen step.
 */
class Gate {
  answered = 0;
  holdAfter = Number.POSITIVE_INFINITY;
  private constructor(private readonly env: RemoteEnv) {}

  static async start(): Promise<Gate> {
    let gate: Gate | undefined;
    const env = await startRemoteEnv({
      reset: countingReset(),
      step: () => {
        if (gate && gate.answered >= gate.holdAfter) return HOLD;
        if (gate) gate.answered++;
        return { reward: 0, done: true };
      },
    });
    gate = new Gate(env);
    return gate;
  }

  get url(): string {
    return this.env.url();
  }

  get waiting(): number {
    return this.env.held;
  }

  open(): void {
    this.holdAfter = Number.POSITIVE_INFINITY;
    this.env.release();
  }

  close(): void {
    this.open();
    this.env.close();
  }
}

beforeAll(async () => {
  gate = await Gate.start();
  const allowed = new URL(gate.url).host;
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = allowed;
  cp = await ControlPlane.start();
  team = await cp.team("jobs");
  await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: allowed });
  await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: allowed });
}, 60_000);
afterAll(async () => {
  delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
  gate?.close();
  await cp?.stop();
});

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
    // A KL to a snapshot named by handle: the worker that takes the job over must load the same reference.
    const ref = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "rl-fault-ref",
      baseModel: BASE,
      rank: 4,
    });
    const reference = await cp.call<{ handle: string }>(team.key, "/v1/training/save-weights-for-sampler", {
      adapterId: ref.body.id,
    });
    const { adapterId, jobId } = await createRlJob("rl-fault", {
      referenceKl: 0.05,
      referenceModel: reference.handle,
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
    expect(await cp.t.db.metric.count({ where: { jobId, name: "reference_kl/mean" } })).toBe(steps);
    const final = await cp.t.db.checkpoint.findFirstOrThrow({ where: { jobId }, orderBy: { step: "desc" } });
    expect(final.step).toBe(trained);
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).step).toBe(trained);
  }, 180_000);
});

describe("resuming a job", () => {
  it("goes on from a cancelled job's last checkpoint to the end, through the SDK's typed client, storing each step once", async () => {
    const client = createOpenTinkerClient({ url: cp.url, apiKey: team.key });
    const adapter = await client.adapters.create.mutate({ name: "rl-resumed", baseModel: BASE, rank: 2 });
    const env = await client.environments.create.mutate({
      name: "gated-resume",
      kind: "REMOTE",
      url: gate.url,
    });
    // Two episodes a step; step 3's rollout waits, after the checkpoint of step 2.
    gate.answered = 0;
    gate.holdAfter = 3 * 2;
    const config = {
      steps: 5,
      groupsPerStep: 1,
      groupSize: 2,
      checkpointEvery: 2,
      dropConstantGroups: false,
    };
    const job = await client.jobs.create.mutate({
      kind: "RL",
      adapterId: adapter.id,
      environmentId: env.id,
      config,
    });
    await until(async () => (gate.waiting > 0 ? true : undefined), "step 3's rollout");
    await expect(client.jobs.resume.mutate({ jobId: job.id })).rejects.toMatchObject({
      message: expect.stringContaining("only a failed or cancelled job can be resumed"),
      data: { code: "BAD_REQUEST" },
    });
    await client.jobs.cancel.mutate({ jobId: job.id });
    // The held rollout is cut short by the cancel: nothing of step 3 is stored.
    const cancelled = await finished(job.id);
    gate.open();
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled.step).toBe(3);

    // Another team's job answers like a missing one, and stays as it was.
    const stranger = await cp.team("jobs-resume-stranger");
    const foreign = await cp.api(stranger.key, "POST", `/v1/jobs/${job.id}/resume`);
    expect(foreign.status).toBe(404);
    expect((await cp.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).status).toBe("CANCELLED");

    const resumed = await client.jobs.resume.mutate({ jobId: job.id });
    expect(resumed).toMatchObject({ status: "QUEUED", error: null, cancelRequested: false });
    const done = await finished(job.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.step).toBe(5);
    await expectCompleteHistory(job.id, 5, 2);
    // Steps 2 on ran again from the checkpoint of step 2: the trainer's step counts each trained step once.
    expect(await cp.t.db.metric.count({ where: { jobId: job.id, name: "step/value" } })).toBe(5);
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).step).toBe(5);
  }, 120_000);
});

describe("resume bookkeeping", () => {
  it("marks the versions published by steps lost with their worker as superseded, and the registry skips them", async () => {
    // The worker the job resumes on (the test before killed one of the two).
    await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: new URL(gate.url).host });
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "rl-superseded",
      baseModel: BASE,
      rank: 2,
    });
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "gated",
      kind: "REMOTE",
      url: gate.url,
    });
    // Two episodes a step, checkpoints after steps 1, 3 and 5, a version published every step.
    gate.answered = 0;
    gate.holdAfter = 3 * 2;
    const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId: adapter.body.id,
      environmentId: env.body.id,
      config: {
        steps: 6,
        groupsPerStep: 1,
        groupSize: 2,
        checkpointEvery: 2,
        dropConstantGroups: false,
        retention: "keep-all",
      },
    });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    // Step 3's rollout waits: steps 0-2 are stored, step 2's version is published, the last checkpoint is after step 1.
    await until(async () => (gate.waiting > 0 ? true : undefined), "step 3's rollout");
    const running = await cp.t.db.job.findUniqueOrThrow({ where: { id: job.body.id } });
    expect(running.step).toBe(3);
    const checkpoints = await cp.t.db.checkpoint.findMany({ where: { jobId: job.body.id } });
    expect(checkpoints.map((c) => c.name).sort()).toEqual([
      `job-${job.body.id}-step-0`,
      `job-${job.body.id}-step-2`,
    ]);
    const resumeFrom = checkpoints.find((c) => c.name.endsWith("-step-2"))?.createdAt ?? new Date();
    const lost = await cp.t.db.snapshot.findMany({
      where: { jobId: job.body.id, createdAt: { gt: resumeFrom } },
    });
    expect(lost.map((s) => s.version)).toEqual([4]);
    cp.workers.find((w) => w.id === running.workerId)?.child.kill("SIGKILL");
    gate.open();
    expect((await finished(job.body.id)).status).toBe("SUCCEEDED");

    type Version = { version: number; handle: string; supersededAt: string | null };
    const versions = await cp.api<Version[]>(team.key, "GET", `/v1/adapters/${adapter.body.id}/versions`);
    expect(versions.body.filter((v) => v.supersededAt).map((v) => v.version)).toEqual([4]);
    const lookup = await cp.api<Version>(
      team.key,
      "GET",
      `/v1/snapshots/lookup?handle=${encodeURIComponent(versions.body[3]?.handle ?? "")}`,
    );
    expect(lookup.body.supersededAt).not.toBeNull();
    const registry = await cp.t.db.snapshotRegistry.findUniqueOrThrow({
      where: { adapterId: adapter.body.id },
      include: { snapshot: true },
    });
    expect(registry.snapshot?.version).toBe(Math.max(...versions.body.map((v) => v.version)));
    expect(registry.snapshot?.supersededAt).toBeNull();
  }, 120_000);
});
