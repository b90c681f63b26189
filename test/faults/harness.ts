// Fixtures of the fault-injection suite: a real control plane (test/control-plane
// harness) whose worker's database connections carry a name of their own, so a
// fault can target the job's connections alone; an RL job on the built-in
// arithmetic environment with validation; the database faults (terminated
// connections, held table locks) from an admin connection; and the checks that
// a job survived a fault with its history whole.
import { expect } from "vitest";
import { ControlPlane, type Team, until } from "../control-plane/harness.ts";

/** The application_name of every database connection the fault suite's workers open (pg reads PGAPPNAME). */
export const WORKER_APP = "opentinker-fault-worker";

/** The job every fault test runs: small, but long enough for faults to land mid-run. */
export const JOB = {
  steps: 12,
  groupsPerStep: 2,
  groupSize: 2,
  validationEvery: 4,
  checkpointEvery: 3,
} as const;

export interface FaultPlane {
  cp: ControlPlane;
  team: Team;
}

/** A control plane with one worker; `workerEnv` adds to its settings (e.g. an S3 store). */
export async function startFaultPlane(
  options: { workerEnv?: Record<string, string>; start?: Parameters<typeof ControlPlane.start>[0] } = {},
): Promise<FaultPlane> {
  const cp = await ControlPlane.start(options.start);
  const team = await cp.team("faults");
  await cp.startWorker({ PGAPPNAME: WORKER_APP, ...options.workerEnv });
  return { cp, team };
}

export interface StartedJob {
  jobId: string;
  adapterId: string;
}

/** Creates an adapter, the arithmetic environment and the suite's RL job. */
export async function startRlJob({ cp, team }: FaultPlane, name: string): Promise<StartedJob> {
  const { adapterId, environmentId } = await cp.arithmeticSetUp(team, name, { maxOperand: 5 });
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId,
    environmentId,
    config: {
      steps: JOB.steps,
      groupsPerStep: JOB.groupsPerStep,
      groupSize: JOB.groupSize,
      seed: 11,
      checkpointEvery: JOB.checkpointEvery,
      validation: { every: JOB.validationEvery, groups: 2 },
      // Every step trains and publishes, so a step applied or published twice shows.
      dropConstantGroups: false,
      // Every snapshot is kept, so the version sequence can be checked whole.
      retention: "keep-all",
    },
  });
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return { jobId: job.body.id, adapterId };
}

const ENDED = ["SUCCEEDED", "FAILED", "CANCELLED"];

/** The job's row; throws when no worker is left to run it (no supervisor restarts one here). */
export async function jobRow(cp: ControlPlane, jobId: string) {
  if (cp.workers.every((w) => w.child.exitCode !== null || w.child.signalCode !== null)) {
    const last = cp.workers.at(-1)?.output.slice(-20).join("\n");
    throw new Error(`every worker has exited; the last one said:\n${last}`);
  }
  return cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
}

/** Whether the job has ended (a job sent back to the queue by a fault has not). */
export async function jobEnded(cp: ControlPlane, jobId: string): Promise<boolean> {
  return ENDED.includes((await jobRow(cp, jobId)).status);
}

/** Waits until the job is RUNNING at `step` or later; false when it ended first. */
export function reachedStep(cp: ControlPlane, jobId: string, step: number, ms = 90_000): Promise<boolean> {
  return until(
    async () => {
      const job = await jobRow(cp, jobId);
      if (ENDED.includes(job.status)) return false;
      return job.status === "RUNNING" && job.step >= step ? true : undefined;
    },
    `job ${jobId} to reach step ${step}`,
    ms,
  );
}

export function finished(cp: ControlPlane, jobId: string, ms = 150_000) {
  return until(
    async () => {
      const job = await jobRow(cp, jobId);
      return ENDED.includes(job.status) ? job : undefined;
    },
    `job ${jobId} to end`,
    ms,
  );
}

interface Backend {
  pid: number;
  state: string | null;
  waitEventType: string | null;
  query: string | null;
}

/** The worker's connections to this test's database. */
export function workerBackends(cp: ControlPlane): Promise<Backend[]> {
  return cp.t.db.$queryRaw<Backend[]>`
    SELECT pid, state, wait_event_type AS "waitEventType", query
    FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${WORKER_APP} AND pid <> pg_backend_pid()`;
}

/** The worker's connections that wait on a lock (a statement of the job's step, blocked). */
export async function workerLockWaits(cp: ControlPlane): Promise<Backend[]> {
  return (await workerBackends(cp)).filter((b) => b.state === "active" && b.waitEventType === "Lock");
}

/** Terminates every connection of the worker to this database; returns the pids it terminated. */
export async function terminateWorkerConnections(cp: ControlPlane): Promise<number[]> {
  const rows = await cp.t.db.$queryRaw<{ pid: number; terminated: boolean }[]>`
    SELECT pid, pg_terminate_backend(pid) AS terminated
    FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${WORKER_APP} AND pid <> pg_backend_pid()`;
  return rows.filter((r) => r.terminated).map((r) => r.pid);
}

/**
 * Holds ACCESS EXCLUSIVE locks on `tables` in an open transaction of the
 * admin connection while `during` runs, then releases them (rolls back). The
 * tables are locked one after another, so a step's transaction holding one and
 * wanting the next can deadlock with us: when Postgres picks our LOCK as the
 * victim (40P01), nothing was held and we take them again.
 */
export async function withTablesLocked<T>(
  cp: ControlPlane,
  tables: readonly string[],
  during: () => Promise<T>,
): Promise<T> {
  const list = tables.map((t) => `"${t}"`).join(", ");
  for (let attempt = 1; ; attempt++) {
    let locked = false;
    try {
      return await cp.t.db.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe(`LOCK TABLE ${list} IN ACCESS EXCLUSIVE MODE`);
          locked = true;
          return during();
        },
        { maxWait: 10_000, timeout: 120_000 },
      );
    } catch (error) {
      if (locked || attempt >= 5 || !String(error).includes("40P01")) throw error;
    }
  }
}

/** The steps of a run that carry a validation: before the first (step 0), every N steps and after the last. */
export function validationSteps(steps: number, every: number): number[] {
  const out = new Set([0, steps - 1]);
  for (let s = every - 1; s < steps; s += every) out.add(s);
  return [...out].sort((a, b) => a - b);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * A job that survived faults ended as if none had happened: SUCCEEDED at its
 * last step, every step stored once (trajectories and metrics), every optimizer
 * step applied once, snapshot versions neither skipped nor reused, and its
 * validation curve whole.
 */
export async function expectIntactRun(cp: ControlPlane, { jobId, adapterId }: StartedJob): Promise<void> {
  const job = await jobRow(cp, jobId);
  expect(job.status, `job ended ${job.status}: ${job.error}`).toBe("SUCCEEDED");
  expect(job.error).toBeNull();
  expect(job.step).toBe(JOB.steps);
  await expectEveryStepOnce(cp, jobId);
  await expectTrainedOnce(cp, { jobId, adapterId });
  await expectVersionChain(cp, { jobId, adapterId });
  const validated = await cp.t.db.metric.findMany({
    where: { jobId, name: "val/reward/mean" },
    orderBy: { step: "asc" },
  });
  expect(
    validated.map((m) => m.step),
    "steps with a validation",
  ).toEqual(validationSteps(JOB.steps, JOB.validationEvery));
}

/** Steps 0..steps-1 each hold their whole rollout and one reward metric; no (step, metric) stored twice. */
async function expectEveryStepOnce(cp: ControlPlane, jobId: string): Promise<void> {
  const perStep = JOB.groupsPerStep * JOB.groupSize;
  const trajectories = await cp.t.db.trajectory.groupBy({
    by: ["step"],
    where: { jobId },
    _count: { _all: true },
    orderBy: { step: "asc" },
  });
  expect(
    trajectories.map((t) => [t.step, t._count._all]),
    "trajectories per step",
  ).toEqual(range(JOB.steps).map((s) => [s, perStep]));
  const rewards = await cp.t.db.metric.findMany({
    where: { jobId, name: "reward/mean" },
    orderBy: { step: "asc" },
  });
  expect(
    rewards.map((m) => m.step),
    "steps with a reward/mean metric",
  ).toEqual(range(JOB.steps));
  const twice = await cp.t.db.metric.groupBy({
    by: ["step", "name"],
    where: { jobId },
    _count: { _all: true },
    having: { id: { _count: { gt: 1 } } },
  });
  expect(twice, "metrics stored twice for a step").toEqual([]);
}

/** The trainer's step after step s is s + 1, and the adapter ends at `steps`: no optimizer step lost or applied twice. */
async function expectTrainedOnce(cp: ControlPlane, { jobId, adapterId }: StartedJob): Promise<void> {
  const trainerSteps = await cp.t.db.metric.findMany({
    where: { jobId, name: "step/value" },
    orderBy: { step: "asc" },
  });
  expect(
    trainerSteps.map((m) => [m.step, m.value]),
    "trainer step after each step",
  ).toEqual(range(JOB.steps).map((s) => [s, s + 1]));
  const adapter = await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } });
  expect(adapter.step).toBe(JOB.steps);
}

/**
 * Snapshot versions are 1..n with none skipped (a superseded one stays, its
 * number never reused); each step's rollout used one surviving version, newer
 * than the step before's; the registry points at the newest surviving one.
 */
async function expectVersionChain(cp: ControlPlane, { jobId, adapterId }: StartedJob): Promise<void> {
  const snapshots = await cp.t.db.snapshot.findMany({ where: { adapterId }, orderBy: { version: "asc" } });
  const versions = snapshots.map((s) => s.version);
  expect(versions, "snapshot versions").toEqual(range(versions.length).map((i) => i + 1));
  const surviving = new Set(snapshots.filter((s) => !s.supersededAt).map((s) => s.version));
  const used = await cp.t.db.trajectory.groupBy({
    by: ["step", "snapshotVersion"],
    where: { jobId },
    orderBy: [{ step: "asc" }, { snapshotVersion: "asc" }],
  });
  const stepVersions = used.map((u) => u.snapshotVersion);
  expect(
    used.map((u) => u.step),
    "one snapshot version per step's rollout",
  ).toEqual(range(JOB.steps));
  for (const version of stepVersions)
    expect(surviving.has(version), `version ${version} survives`).toBe(true);
  expect(
    stepVersions.every((v, i) => i === 0 || v > (stepVersions[i - 1] as number)),
    `each step samples a newer version than the step before: ${stepVersions}`,
  ).toBe(true);
  const registry = await cp.t.db.snapshotRegistry.findUniqueOrThrow({
    where: { adapterId },
    include: { snapshot: true },
  });
  expect(registry.snapshot?.version).toBe(Math.max(...surviving));
}
