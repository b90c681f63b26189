// Sharing a worker's adapter slots across teams (placement.ts's rule): eviction
// asks the team over its share to give up an idle adapter first; server-side
// jobs never overfill a worker and never take its last slot, so another team's
// new adapter trains at once; a job that finds no slot stays QUEUED, without
// burning its queue attempts, and starts when one frees; the remote example runs
// beside the demo team's jobs and leaves no adapter behind.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { seed } from "@opentinker/db";
import { RELEASED_CHECKPOINT } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";
import { countingReset, HOLD, type RemoteEnv, startRemoteEnv } from "./remote-env-server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** npm start's worker: one, with the default capacity. */
const CAPACITY = 4;

let cp: ControlPlane;
/** Its steps are held open (the jobs' rollouts wait on them), answered at the end. */
let env: RemoteEnv;
let demo: Team;
let teamA: Team;
let teamC: Team;
/** The most adapters one worker held at any moment the monitor looked. */
let mostHeld = 0;
let monitor: NodeJS.Timeout | undefined;

async function watchSlots(): Promise<void> {
  const rows = await cp.t.db.adapter.groupBy({
    by: ["workerId"],
    where: { workerId: { not: null } },
    _count: { _all: true },
  });
  for (const row of rows) mostHeld = Math.max(mostHeld, row._count._all);
}

beforeAll(async () => {
  env = await startRemoteEnv({ reset: countingReset(), step: () => HOLD });
  const allowed = env.host;
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = allowed;
  cp = await ControlPlane.start();
  const seeded = await seed(cp.t.db);
  demo = { id: seeded.teamId, slug: "demo", key: seeded.createdApiKey as string };
  teamA = await cp.team("slots-a");
  teamC = await cp.team("slots-c");
  await cp.startWorker({ WORKER_CAPACITY: String(CAPACITY), OPENTINKER_REMOTE_ENV_HOSTS: allowed });
  monitor = setInterval(() => void watchSlots().catch(() => {}), 50);
}, 60_000);
afterAll(async () => {
  clearInterval(monitor);
  delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
  env?.close();
  await cp?.stop();
});

const data = [
  {
    modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
    lossFnInputs: {
      targetTokens: { dtype: "int64", data: [20, 30, 40] },
      weights: { dtype: "float32", data: [1, 1, 1] },
    },
  },
];

async function adapter(team: Team, name: string): Promise<string> {
  const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name,
    baseModel: BASE,
    rank: 2,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id;
}

/** A forward pass, retried while the service answers 503 (as the SDKs do): how many 503s it met. */
async function train(team: Team, adapterId: string, maxBusy = 100): Promise<number> {
  for (let busy = 0; busy <= maxBusy; busy++) {
    const answer = await cp.api<{ requestId: string; message: string }>(
      team.key,
      "POST",
      "/v1/training/forward",
      { adapterId, data, lossFn: "cross_entropy" },
    );
    if (answer.status === 503) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const done = await cp.api<{ status: string; error: string | null }>(
      team.key,
      "POST",
      `/v1/futures/${answer.body.requestId}/wait`,
      { timeoutMs: 30_000 },
    );
    expect(done.body.status, done.body.error ?? "").toBe("SUCCEEDED");
    return busy;
  }
  throw new Error(`adapter ${adapterId} met ${maxBusy} 503s in a row`);
}

const workerOf = async (adapterId: string) =>
  (await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).workerId;

async function hangingJob(team: Team, name: string): Promise<string> {
  const adapterId = await adapter(team, name);
  const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
    name: `${name}-env`,
    kind: "REMOTE",
    url: env.url("hang"),
  });
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId,
    environmentId: created.body.id,
    config: { steps: 5, groupsPerStep: 1, groupSize: 2 },
  });
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return job.body.id;
}

const jobsOf = (team: Team) =>
  cp.t.db.job.findMany({ where: { teamId: team.id }, orderBy: { createdAt: "asc" } });
const running = async (team: Team) => (await jobsOf(team)).filter((j) => j.status === "RUNNING");

/** The job's run in graphile-worker's queue (one per job, by its key). */
async function queueRun(jobId: string): Promise<{ attempts: number } | undefined> {
  const [row] = await cp.t.db.$queryRaw<{ attempts: number }[]>`
    SELECT attempts FROM graphile_worker.jobs WHERE key = ${`job:${jobId}`}`;
  return row;
}

describe("sharing worker slots across teams", () => {
  it("asks an idle adapter of the team over its share to leave, before another team's older one", async () => {
    const a1 = await adapter(teamA, "a1");
    const bs = [await adapter(demo, "b1"), await adapter(demo, "b2"), await adapter(demo, "b3")];
    const c1 = await adapter(teamC, "c1");
    try {
      await train(teamA, a1); // the least recently used of all
      for (const b of bs) await train(demo, b);
      // 4 of 4 slots: 1 of A's, 3 of the demo team's; three teams want slots, a share of 1 each.
      expect(await train(teamC, c1)).toBeGreaterThan(0);
      expect(await workerOf(c1)).not.toBeNull();
      expect(await workerOf(a1), "A's adapter, within its share, stays").not.toBeNull();
      expect(await workerOf(bs[0] as string), "the demo team's least recently used one left").toBeNull();
      const released = { adapterId: bs[0] as string, name: RELEASED_CHECKPOINT };
      expect(await cp.t.db.checkpoint.count({ where: released })).toBe(1);
      expect(mostHeld).toBeLessThanOrEqual(CAPACITY);
    } finally {
      // Nothing of this test holds a slot in the next ones.
      const owned = [[teamA, a1] as const, [teamC, c1] as const, ...bs.map((b) => [demo, b] as const)];
      for (const [team, id] of owned) await cp.api(team.key, "DELETE", `/v1/adapters/${id}`);
    }
  }, 120_000);

  it("runs the demo team's quota of jobs within capacity, leaving a slot: the rest stay QUEUED, attempts unspent, and start when a slot frees", async () => {
    const { maxConcurrentJobs } = await cp.t.db.team.findUniqueOrThrow({ where: { id: demo.id } });
    const jobIds: string[] = [];
    for (let i = 0; i < maxConcurrentJobs; i++) jobIds.push(await hangingJob(demo, `job-${i}`));
    await until(async () => ((await running(demo)).length >= CAPACITY - 1 ? true : undefined), "jobs to run");
    // Long enough for every queued run to have been tried more than once.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const jobs = await jobsOf(demo);
    expect(jobs.filter((j) => j.status === "RUNNING")).toHaveLength(CAPACITY - 1);
    const waiting = jobs.filter((j) => j.status === "QUEUED");
    expect(waiting).toHaveLength(maxConcurrentJobs - (CAPACITY - 1));
    for (const job of waiting) {
      expect(job.startedAt).toBeNull();
      expect((await queueRun(job.id))?.attempts ?? 0).toBeLessThanOrEqual(1);
      // Its page says why it waits.
      const shown = await cp.api<{ waitingFor: string | null }>(demo.key, "GET", `/v1/jobs/${job.id}`);
      expect(shown.body.waitingFor).toMatch(/slots/);
    }
    expect(mostHeld).toBeLessThanOrEqual(CAPACITY);
    if (waiting.length === 0) return;
    // A slot frees: a waiting job starts in it.
    const [first] = await running(demo);
    expect((await cp.api(demo.key, "POST", `/v1/jobs/${first?.id}/cancel`)).status).toBe(200);
    const started = async () => (await running(demo)).some((j) => waiting.some((w) => w.id === j.id));
    await until(async () => ((await started()) ? true : undefined), "a waiting job to start", 30_000);
    expect(await running(demo)).toHaveLength(CAPACITY - 1);
    expect(mostHeld).toBeLessThanOrEqual(CAPACITY);
  }, 180_000);

  it("the remote example trains beside the demo team's jobs and leaves no adapter behind", async () => {
    const before = await cp.t.db.adapter.count({ where: { teamId: demo.id } });
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "examples/rl-remote.ts", "--url", cp.url, "--model", BASE, "--steps", "1"],
      { cwd: ROOT, env: { ...process.env, OPENTINKER_API_KEY: demo.key }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(output).toMatch(/reward \d\.\d+ → \d\.\d+ over 1 steps/);
    expect(code, output).toBe(0);
    expect(await cp.t.db.adapter.count({ where: { teamId: demo.id } })).toBe(before);
    expect(mostHeld).toBeLessThanOrEqual(CAPACITY);
  }, 120_000);

  it("another team's new adapter trains at its first call or within a few retries while the jobs run", async () => {
    expect((await running(demo)).length).toBeGreaterThan(0);
    const a2 = await adapter(teamA, "a2");
    const started = Date.now();
    expect(await train(teamA, a2, 5)).toBeLessThanOrEqual(3);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(mostHeld).toBeLessThanOrEqual(CAPACITY);
  }, 60_000);
});
