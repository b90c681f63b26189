// Quotas and fairness under load from one team: its queued requests stay within
// its quota however many arrive at once, its pipelined training calls run back to
// back, its big jobs are kept from starving other teams' sampling, and its cancel
// (or a worker's drain) takes effect within the rollout step in flight.
import { registerBaseModel } from "@opentinker/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";
import { countingReset, HOLD, type RemoteEnv, startRemoteEnv } from "./remote-env-server.ts";

let cp: ControlPlane;
let team: Team;
let env: RemoteEnv;
/** Episodes that reached their step so far, by environment ("count" or "hang"). */
const steps = { count: 0, hang: 0 };

/** Each episode's own prompt (distinct, so the sampler's prefix cache cannot share their prefill). */
const prompt = (length: number, episode: number) =>
  Array.from({ length }, (_, i) => 10 + ((i * 7 + episode) % 50));

/**
 * Two remote environments: /count answers every step at once (and counts them);
 * /hang never answers a step, so a rollout through it waits until it is released.
 */
function startEnvServer(): Promise<RemoteEnv> {
  return startRemoteEnv({
    // Long prompts of their own: the step's sampling is mostly prefill, which a FIFO sampler serves in order.
    reset: countingReset((episode, name) => prompt(name === "count" ? 200 : 3, episode)),
    step: (_input, name) => {
      const kind = name as "count" | "hang";
      steps[kind]++;
      return kind === "hang" ? HOLD : { reward: 0, done: true };
    },
  });
}

beforeAll(async () => {
  env = await startEnvServer();
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = env.host;
  cp = await ControlPlane.start();
  team = await cp.team("fair");
  // A poll this slow makes any call that waits for it time out: calls must arrive by notice.
  await cp.startWorker({
    WORKER_POLL_INTERVAL_MS: "120000",
    OPENTINKER_REMOTE_ENV_HOSTS: env.host,
  });
}, 60_000);
afterAll(async () => {
  delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
  env?.close();
  await cp?.stop();
});

const datum = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [2, 3, 4] },
    weights: { dtype: "float32", data: [1, 1, 1] },
  },
};

async function adapter(name: string, as: Team = team): Promise<string> {
  const created = await cp.api<{ id: string }>(as.key, "POST", "/v1/adapters", {
    name,
    baseModel: BASE,
    rank: 2,
  });
  expect(created.status).toBe(200);
  return created.body.id;
}

async function remoteJob(name: string, kind: "count" | "hang", config: object) {
  const adapterId = await adapter(name);
  const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
    name: `${name}-env`,
    kind: "REMOTE",
    url: env.url(kind),
  });
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId,
    environmentId: created.body.id,
    config,
  });
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return { adapterId, jobId: job.body.id };
}

const jobRow = (id: string) => cp.t.db.job.findUniqueOrThrow({ where: { id } });

describe("pipelined training calls", () => {
  it("run back to back in seq order, none waiting for the queue's poll", async () => {
    const adapterId = await adapter("pipelined");
    const body = { adapterId, data: [datum], lossFn: "cross_entropy" };
    const accepted: { requestId: string; seq: number }[] = [];
    for (let i = 0; i < 20; i++)
      accepted.push(
        (
          await cp.api<{ requestId: string; seq: number }>(
            team.key,
            "POST",
            "/v1/training/forward-backward",
            body,
          )
        ).body,
      );
    for (const { requestId } of accepted) {
      const done = await cp.api<{ status: string }>(team.key, "POST", `/v1/futures/${requestId}/wait`, {
        timeoutMs: 20_000,
      });
      expect(done.body.status).toBe("SUCCEEDED");
    }
    const rows = await cp.t.db.request.findMany({ where: { adapterId }, orderBy: { startedAt: "asc" } });
    expect(rows.map((r) => r.seq)).toEqual(accepted.map((a) => a.seq));
  }, 60_000);
});

describe("the queued-request quota over HTTP", () => {
  it("accepts exactly maxQueuedRequests of 100 concurrent calls, and writes nothing for the rest", async () => {
    const racer = await cp.team("racer");
    // A base model no worker serves: accepted calls stay queued, so the count is exact.
    await registerBaseModel(cp.t.db, {
      name: "unserved",
      path: "/nonexistent",
      architecture: "llama",
      vocabSize: 32,
      contextLength: 64,
    });
    await cp.t.db.team.update({ where: { id: racer.id }, data: { maxQueuedRequests: 30 } });
    const body = { policy: { baseModel: "unserved" }, prompt: datum.modelInput, params: { maxTokens: 1 } };
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        cp.api<{ message: string }>(racer.key, "POST", "/v1/sampling/sample", body),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(30);
    for (const refused of answers.filter((a) => a.status !== 200)) {
      expect(refused.status).toBe(429);
      expect(refused.body.message).toMatch(/maxQueuedRequests is 30/);
    }
    expect(await cp.t.db.request.count({ where: { teamId: racer.id } })).toBe(30);
  });
});

describe("a big job and everyone else", () => {
  it("another team's small sample is served while the job's rollout step is still sampling", async () => {
    const other = await cp.team("small");
    const { jobId } = await remoteJob("big", "count", { steps: 2, groupsPerStep: 64, groupSize: 8 });
    // The first episodes are done: the step's 512 sequences are all in the sampler.
    await until(async () => (steps.count > 0 ? true : undefined), "the job's rollout to sample");
    const before = steps.count;
    const answer = await cp.api<{ result?: { status: string } }>(other.key, "POST", "/v1/sampling/sample", {
      policy: { baseModel: BASE },
      prompt: datum.modelInput,
      params: { maxTokens: 2 },
      waitMs: 60_000,
    });
    expect(answer.body.result?.status).toBe("SUCCEEDED");
    // Served beside the job's sequences, not after them (served in order, it waits for ~500 of them).
    expect(steps.count - before).toBeLessThan(128);
    await cp.api(team.key, "POST", `/v1/jobs/${jobId}/cancel`);
    await until(async () => ((await jobRow(jobId)).finishedAt ? true : undefined), "the job to stop");
  }, 120_000);

  it("cancel takes effect within the rollout step in flight, even one waiting on its environment", async () => {
    const seen = steps.hang;
    const { jobId, adapterId } = await remoteJob("stuck", "hang", {
      steps: 5,
      groupsPerStep: 2,
      groupSize: 2,
    });
    await until(async () => (steps.hang > seen ? true : undefined), "the rollout to wait on the environment");
    expect((await cp.api(team.key, "POST", `/v1/jobs/${jobId}/cancel`)).status).toBe(200);
    // The environment never answers: the step can only end by being cut short.
    const done = await until(
      async () => {
        const row = await jobRow(jobId);
        return row.finishedAt ? row : undefined;
      },
      "the job to stop",
      20_000,
    );
    expect(done.status).toBe("CANCELLED");
    expect(done.step).toBe(0);
    expect(await cp.t.db.trajectory.count({ where: { jobId } })).toBe(0);
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).workerId).toBeNull();
  }, 60_000);

  it("a worker drains within its step when stopped, leaving the job back in the queue and itself offline", async () => {
    await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: env.host });
    const seen = steps.hang;
    const { jobId } = await remoteJob("drained", "hang", { steps: 5, groupsPerStep: 1, groupSize: 2 });
    await until(async () => (steps.hang > seen ? true : undefined), "the rollout to wait on the environment");
    const { workerId } = await jobRow(jobId);
    const victim = cp.workers.find((w) => w.id === workerId);
    if (!victim) throw new Error(`job ${jobId} runs on no worker of this test`);
    victim.child.kill("SIGTERM");
    // The environment never answers: the worker exits only because the step was cut short.
    expect(await victim.exited).toBe(0);
    const after = await jobRow(jobId);
    // Queued again, or already taken by the other worker: never left running on the drained one.
    expect(after.workerId).not.toBe(victim.id);
    expect(["QUEUED", "RUNNING"]).toContain(after.status);
    expect((await cp.t.db.worker.findUniqueOrThrow({ where: { id: victim.id } })).status).toBe("OFFLINE");
    expect(await cp.t.db.trajectory.count({ where: { jobId } })).toBe(0);
  }, 60_000);
});
