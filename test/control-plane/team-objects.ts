// A team with one object of every kind an API operation can name, and measures
// of what a call could write or change: shared by the tenancy and bad-input tests.
import { BASE, type ControlPlane, type Team, until } from "./harness.ts";
import type { References } from "./openapi.ts";

const datum = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [2, 3, 4] },
    weights: { dtype: "float32", data: [1, 1, 1] },
  },
};

/** A team's objects of every kind an operation can name. */
export async function objectsOf(cp: ControlPlane, team: Team): Promise<References> {
  const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name: `${team.slug}-adapter`,
    baseModel: BASE,
    rank: 2,
  });
  const adapterId = adapter.body.id;
  const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
    name: `${team.slug}-env`,
    kind: "BUILTIN",
    builtin: "arithmetic",
  });
  const { handle } = await cp.call<{ handle: string }>(team.key, "/v1/training/save-weights-for-sampler", {
    adapterId,
  });
  const { path } = await cp.call<{ path: string }>(team.key, "/v1/training/save-state", {
    adapterId,
    name: "s1",
  });
  const request = await cp.api<{ requestId: string }>(team.key, "POST", "/v1/training/forward", {
    adapterId,
    data: [datum],
    lossFn: "cross_entropy",
  });
  const jobAdapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name: `${team.slug}-job-adapter`,
    baseModel: BASE,
    rank: 2,
  });
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "SFT",
    adapterId: jobAdapter.body.id,
    config: { conversations: [{ messages: [{ role: "user", content: "hi" }] }] },
  });
  const keys = await cp.api<{ id: string }[]>(team.key, "GET", "/v1/api-keys");
  return {
    adapterId,
    environmentId: env.body.id,
    jobId: job.body.id,
    requestId: request.body.requestId,
    keyId: keys.body[0]?.id as string,
    handle,
    path,
  };
}

/** Everything any call could write, as one comparable value. */
export async function writes(cp: ControlPlane): Promise<string> {
  const [row] = await cp.t.db.$queryRaw<Record<string, bigint | number | null>[]>`
    SELECT (SELECT count(*) FROM "Adapter") AS adapters, (SELECT sum("requestSeq") FROM "Adapter") AS seqs,
      (SELECT count(*) FROM "Request") AS requests, (SELECT count(*) FROM graphile_worker.jobs) AS queued,
      (SELECT count(*) FROM "Snapshot") AS snapshots, (SELECT count(*) FROM "Checkpoint") AS checkpoints,
      (SELECT count(*) FROM "Environment") AS environments, (SELECT count(*) FROM "Job") AS jobs,
      (SELECT count(*) FROM "Job" WHERE "cancelRequestedAt" IS NOT NULL) AS cancelled,
      (SELECT count(*) FROM "ApiKey" WHERE "revokedAt" IS NULL) AS keys,
      (SELECT count(*) FROM "Trajectory") AS trajectories, (SELECT count(*) FROM "Metric") AS metrics`;
  return JSON.stringify(row, (_key, value) => (typeof value === "bigint" ? Number(value) : value));
}

/** Waits until the queue and every job and call are done, so later writes are the test's own. */
export function quiet(cp: ControlPlane): Promise<true> {
  return until(async () => {
    const [row] = await cp.t.db.$queryRaw<{ busy: bigint }[]>`
      SELECT (SELECT count(*) FROM "Job" WHERE "finishedAt" IS NULL)
        + (SELECT count(*) FROM "Request" WHERE "finishedAt" IS NULL)
        + (SELECT count(*) FROM graphile_worker.jobs) AS busy`;
    return Number(row?.busy) === 0 ? true : undefined;
  }, "the setup's work to finish");
}

/** Everything of a team's that a leak could change, in full, as one comparable value. */
export async function teamFingerprint(cp: ControlPlane, teamId: string): Promise<string> {
  const db = cp.t.db;
  const where = { where: { teamId }, orderBy: { id: "asc" as const } };
  return JSON.stringify(
    await Promise.all([
      db.adapter.findMany(where),
      db.request.findMany(where),
      db.snapshot.findMany(where),
      db.checkpoint.findMany(where),
      db.environment.findMany(where),
      db.job.findMany(where),
      db.apiKey.findMany({ ...where, select: { id: true, revokedAt: true } }),
      db.trajectory.count({ where: { teamId } }),
      db.metric.count({ where: { teamId } }),
    ]),
    (_key, value) => (typeof value === "bigint" ? value.toString() : value),
  );
}
