// Tenancy: with team A's key, every procedure given one of team B's ids or
// handles answers "not found" and changes nothing of B's.
import { enqueueSamplingRequest, tasks } from "@opentinker/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";
import { teamFingerprint } from "./team-objects.ts";

let cp: ControlPlane;
let a: Team;
let b: Team;
const theirs = {
  adapterId: "",
  handle: "",
  requestId: "",
  environmentId: "",
  jobId: "",
  keyId: "",
  statePath: "",
};
let mine = { adapterId: "", environmentId: "" };

const datum = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [2, 3, 4] },
    weights: { dtype: "float32", data: [1, 1, 1] },
  },
};

const setUp = (team: Team, name: string) => cp.arithmeticSetUp(team, name);

beforeAll(async () => {
  cp = await ControlPlane.start();
  a = await cp.team("team-a");
  b = await cp.team("team-b");
  await cp.startWorker();
  const setup = await setUp(b, "b-adapter");
  theirs.adapterId = setup.adapterId;
  theirs.environmentId = setup.environmentId;
  mine = await setUp(a, "a-adapter");
  const saved = await cp.call<{ handle: string }>(b.key, "/v1/training/save-weights-for-sampler", {
    adapterId: theirs.adapterId,
  });
  theirs.handle = saved.handle;
  const state = await cp.call<{ path: string }>(b.key, "/v1/training/save-state", {
    adapterId: theirs.adapterId,
    name: "s1",
  });
  theirs.statePath = state.path;
  const accepted = await cp.api<{ requestId: string }>(b.key, "POST", "/v1/training/forward", {
    adapterId: theirs.adapterId,
    data: [datum],
    lossFn: "cross_entropy",
  });
  theirs.requestId = accepted.body.requestId;
  const other = await setUp(b, "b-job-adapter");
  const job = await cp.api<{ id: string }>(b.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId: other.adapterId,
    environmentId: other.environmentId,
    config: { steps: 1, groupsPerStep: 1, groupSize: 2 },
  });
  theirs.jobId = job.body.id;
  for (;;) {
    const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: theirs.jobId } });
    if (row.finishedAt) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const keys = await cp.api<{ id: string }[]>(b.key, "GET", "/v1/api-keys");
  theirs.keyId = keys.body[0]?.id as string;
}, 120_000);
afterAll(() => cp?.stop());

describe("team isolation", () => {
  it("answers 404 to every procedure given another team's ids, and changes nothing", async () => {
    const before = await teamFingerprint(cp, b.id);
    const { adapterId, handle, requestId, environmentId, jobId, keyId, statePath } = theirs;
    const probes: [string, string, unknown?][] = [
      ["GET", `/v1/adapters/${adapterId}`],
      ["DELETE", `/v1/adapters/${adapterId}`],
      ["GET", `/v1/adapters/${adapterId}/versions`],
      ["GET", `/v1/adapters/${adapterId}/checkpoints`],
      ["GET", `/v1/snapshots/download?handle=${encodeURIComponent(handle)}`],
      ["POST", "/v1/training/forward", { adapterId, data: [datum], lossFn: "cross_entropy" }],
      ["POST", "/v1/training/forward-backward", { adapterId, data: [datum], lossFn: "cross_entropy" }],
      ["POST", "/v1/training/optim-step", { adapterId }],
      ["POST", "/v1/training/save-weights-for-sampler", { adapterId }],
      ["POST", "/v1/training/save-state", { adapterId, name: "stolen" }],
      ["POST", "/v1/training/load-state", { adapterId, path: statePath }],
      [
        "POST",
        "/v1/sampling/sample",
        { policy: { handle }, prompt: datum.modelInput, params: { maxTokens: 2 } },
      ],
      ["POST", "/v1/sampling/compute-logprobs", { policy: { handle }, sequence: datum.modelInput }],
      ["GET", `/v1/futures/${requestId}`],
      ["POST", `/v1/futures/${requestId}/wait`, { timeoutMs: 10 }],
      ["GET", `/v1/environments/${environmentId}`],
      ["DELETE", `/v1/environments/${environmentId}`],
      [
        "POST",
        "/v1/jobs",
        { kind: "RL", adapterId, environmentId: mine.environmentId, config: { steps: 1 } },
      ],
      ["POST", "/v1/jobs", { kind: "RL", adapterId: mine.adapterId, environmentId, config: { steps: 1 } }],
      [
        "POST",
        "/v1/jobs",
        { kind: "EVAL", adapterId: mine.adapterId, environmentId: mine.environmentId, config: { handle } },
      ],
      ["GET", `/v1/jobs/${jobId}`],
      ["POST", `/v1/jobs/${jobId}/cancel`],
      ["GET", `/v1/jobs/${jobId}/metrics`],
      ["GET", `/v1/jobs/${jobId}/trajectories?step=0`],
      ["DELETE", `/v1/api-keys/${keyId}`],
    ];
    for (const [method, route, body] of probes) {
      const response = await cp.api<{ message: string }>(a.key, method, route, body);
      expect(response.status, `${method} ${route}: ${JSON.stringify(response.body)}`).toBe(404);
      expect(response.body.message).toMatch(/not found/);
    }
    // Lists show only the caller's own.
    const adapters = await cp.api<{ id: string }[]>(a.key, "GET", "/v1/adapters");
    expect(adapters.body.map((x) => x.id)).toEqual([mine.adapterId]);
    const jobs = await cp.api<unknown[]>(a.key, "GET", "/v1/jobs");
    expect(jobs.body).toEqual([]);
    expect(await teamFingerprint(cp, b.id)).toBe(before);
    // B's own key still sees all of it.
    expect((await cp.api(b.key, "GET", `/v1/jobs/${jobId}`)).status).toBe(200);
  }, 60_000);

  it("a worker resolves a handle within the caller's team, even for work that bypassed the API", async () => {
    const before = await teamFingerprint(cp, b.id);
    // An EVAL job of team A naming team B's snapshot, written straight into the database.
    const job = await cp.t.db.job.create({
      data: {
        name: "test job",
        teamId: a.id,
        adapterId: mine.adapterId,
        environmentId: mine.environmentId,
        kind: "EVAL",
        config: { handle: theirs.handle, groups: 2 },
      },
    });
    await cp.t.db
      .$executeRaw`SELECT graphile_worker.add_job(${tasks.job}, json_build_object('jobId', ${job.id}::text))`;
    const base = await cp.t.db.baseModel.findUniqueOrThrow({ where: { name: BASE } });
    const sample = await enqueueSamplingRequest(cp.t.db, a.id, {
      kind: "SAMPLE",
      baseModelId: base.id,
      adapterId: null,
      payload: { policy: { handle: theirs.handle }, prompt: datum.modelInput, params: { maxTokens: 2 } },
    });
    const failed = await until(async () => {
      const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: job.id } });
      return row.finishedAt ? row : undefined;
    }, "the job to end");
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(/unknown policy handle/);
    expect(await cp.t.db.trajectory.count({ where: { jobId: job.id } })).toBe(0);
    const request = await until(async () => {
      const row = await cp.t.db.request.findUniqueOrThrow({ where: { id: sample.requestId } });
      return row.finishedAt ? row : undefined;
    }, "the sampling call to end");
    expect(request.status).toBe("FAILED");
    expect(request.error).toMatch(/unknown policy handle/);
    expect(await teamFingerprint(cp, b.id)).toBe(before);
  }, 60_000);

  it("answers 401, and never an internal message, to a key whose team was deleted while it was remembered", async () => {
    const gone = await cp.team("team-gone");
    const adapter = await cp.api<{ id: string }>(gone.key, "POST", "/v1/adapters", {
      name: "doomed",
      baseModel: BASE,
      rank: 2,
    });
    expect(adapter.status).toBe(200);
    // As in a web process that has not heard the revocation yet: the key stays remembered.
    await cp.t.db.$executeRaw`ALTER TABLE "ApiKey" DISABLE TRIGGER "ApiKey_revoked"`;
    try {
      await cp.t.db.team.delete({ where: { id: gone.id } });
      const calls: [string, string, unknown?][] = [
        ["POST", "/v1/adapters", { name: "after", baseModel: BASE, rank: 2 }],
        ["POST", "/v1/environments", { name: "e", kind: "BUILTIN", builtin: "arithmetic" }],
        ["POST", "/v1/api-keys", { name: "k" }],
        [
          "POST",
          "/v1/sampling/sample",
          { policy: { baseModel: BASE }, prompt: datum.modelInput, params: { maxTokens: 2 } },
        ],
        ["POST", "/v1/training/optim-step", { adapterId: adapter.body.id }],
        [
          "POST",
          "/v1/jobs",
          {
            kind: "SFT",
            adapterId: adapter.body.id,
            config: { conversations: [{ messages: [{ role: "user", content: "x" }] }] },
          },
        ],
        ["GET", `/v1/adapters/${adapter.body.id}`],
      ];
      for (const [method, route, body] of calls) {
        const response = await cp.api<{ message: string }>(gone.key, method, route, body);
        expect(response.status, `${method} ${route}: ${JSON.stringify(response.body)}`).toBe(401);
        expect(response.body.message).toMatch(/^missing, unknown or revoked API key/);
      }
    } finally {
      await cp.t.db.$executeRaw`ALTER TABLE "ApiKey" ENABLE TRIGGER "ApiKey_revoked"`;
    }
  });

  it("refuses a missing, malformed or revoked key with 401", async () => {
    expect((await cp.api(null, "GET", "/v1/adapters")).status).toBe(401);
    expect((await cp.api("ot_not-a-key", "GET", "/v1/adapters")).status).toBe(401);
    const created = await cp.api<{ id: string; key: string }>(a.key, "POST", "/v1/api-keys", {
      name: "temp",
    });
    expect((await cp.api(created.body.key, "GET", "/v1/adapters")).status).toBe(200);
    expect((await cp.api(a.key, "DELETE", `/v1/api-keys/${created.body.id}`)).status).toBe(200);
    const revoked = await cp.api<{ message: string }>(created.body.key, "GET", "/v1/adapters");
    expect(revoked.status).toBe(401);
    expect(revoked.body.message).toMatch(/API key/);
  });
});
