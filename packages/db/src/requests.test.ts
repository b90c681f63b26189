import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotFoundError, QuotaExceededError } from "./errors.ts";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { PgListener } from "./pg-listener.ts";
import { REQUEST_CHANNEL } from "./queue-names.ts";
import { RequestWaiter } from "./request-waiter.ts";
import { claimRequest, enqueueSamplingRequest, enqueueTrainingRequest, finishRequest } from "./requests.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { registerWorker } from "./workers.ts";

let t: TestDatabase;
let waiter: RequestWaiter;
beforeAll(async () => {
  t = await createTestDatabase();
  waiter = new RequestWaiter(t.db, t.url);
});
afterAll(async () => {
  await waiter.close();
  await t.drop();
});

const call = (adapterId: string) => ({ adapterId, kind: "OPTIM_STEP" as const, payload: { step: 1 } });

const jobsOf = (adapterId: string) =>
  t.db.$queryRaw<{ task: string; requestId: string }[]>`
    SELECT task_identifier AS task, key AS "requestId"
    FROM graphile_worker.jobs WHERE queue_name = ${`adapter:${adapterId}`} ORDER BY id`;

describe("enqueueTrainingRequest", () => {
  it("places an adapter on its first call, then queues each call in seq order on that worker", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "enqueue-order");
    const worker = await registerWorker(t.db, { host: "h", pid: 1, capacity: 4 });
    const first = await enqueueTrainingRequest(t.db, team.id, call(adapter.id));
    expect(first.seq).toBe(1);
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).workerId).toBe(worker.id);

    // Concurrent calls: the seq and the queue order must agree (the worker runs the queue in order).
    const rest = await Promise.all(
      Array.from({ length: 12 }, () => enqueueTrainingRequest(t.db, team.id, call(adapter.id))),
    );
    expect(rest.map((r) => r.seq).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      Array.from({ length: 12 }, (_, i) => i + 2),
    );
    const jobs = await jobsOf(adapter.id);
    const seqOf = new Map([first, ...rest].map((r) => [r.requestId, r.seq]));
    expect(jobs.map((j) => seqOf.get(j.requestId))).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(new Set(jobs.map((j) => j.task))).toEqual(new Set([`train:${worker.id}`]));
  });

  it("re-places the adapter when its worker's heartbeat is stale", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "enqueue-stale");
    const old = await registerWorker(t.db, { host: "old", pid: 1, capacity: 4 });
    await t.db.adapter.update({ where: { id: adapter.id }, data: { workerId: old.id } });
    await t.db.worker.update({
      where: { id: old.id },
      data: { heartbeatAt: new Date(Date.now() - 3_600_000) },
    });
    const fresh = await registerWorker(t.db, { host: "new", pid: 2, capacity: 4 });
    await t.db.worker.updateMany({
      where: { id: { notIn: [old.id, fresh.id] } },
      data: { status: "OFFLINE" },
    });
    const { requestId } = await enqueueTrainingRequest(t.db, team.id, call(adapter.id));
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).workerId).toBe(fresh.id);
    expect((await jobsOf(adapter.id)).map((j) => [j.task, j.requestId])).toEqual([
      [`train:${fresh.id}`, requestId],
    ]);
  });

  it("refuses another team's or an unknown adapter, and a full queue, writing nothing", async () => {
    const a = await makeTeamWithAdapter(t.db, "enqueue-a");
    const b = await makeTeamWithAdapter(t.db, "enqueue-b");
    await registerWorker(t.db, { host: "h", pid: 3, capacity: 4 });
    await expect(enqueueTrainingRequest(t.db, a.team.id, call(b.adapter.id))).rejects.toThrow(NotFoundError);
    await expect(enqueueTrainingRequest(t.db, a.team.id, call("no-such-adapter"))).rejects.toThrow(
      NotFoundError,
    );
    await t.db.team.update({ where: { id: a.team.id }, data: { maxQueuedRequests: 1 } });
    await enqueueTrainingRequest(t.db, a.team.id, call(a.adapter.id));
    await expect(enqueueTrainingRequest(t.db, a.team.id, call(a.adapter.id))).rejects.toThrow(
      QuotaExceededError,
    );
    expect(await t.db.request.count({ where: { teamId: a.team.id } })).toBe(1);
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: a.adapter.id } })).requestSeq).toBe(1);
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: b.adapter.id } })).requestSeq).toBe(0);
    expect(await jobsOf(b.adapter.id)).toEqual([]);
  });
});

describe("the queued-request quota", () => {
  it("holds exactly under 100 concurrent calls, training and sampling mixed, writing nothing for the refused", async () => {
    const { team, adapter, baseModel } = await makeTeamWithAdapter(t.db, "quota-race");
    await registerWorker(t.db, { host: "h", pid: 5, capacity: 4 });
    await t.db.team.update({ where: { id: team.id }, data: { maxQueuedRequests: 30 } });
    const calls = Array.from({ length: 100 }, (_, i) =>
      i % 2 === 0
        ? enqueueTrainingRequest(t.db, team.id, call(adapter.id))
        : enqueueSamplingRequest(t.db, team.id, {
            kind: "SAMPLE",
            baseModelId: baseModel.id,
            adapterId: null,
            payload: { prompt: [1] },
          }),
    );
    const settled = await Promise.allSettled(calls);
    const accepted = settled.filter((s) => s.status === "fulfilled");
    const refused = settled.flatMap((s) => (s.status === "rejected" ? [s.reason] : []));
    expect(accepted).toHaveLength(30);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(QuotaExceededError);
      expect((reason as Error).message).toMatch(/maxQueuedRequests is 30/);
    }
    expect(await t.db.request.count({ where: { teamId: team.id } })).toBe(30);
    const training = accepted.filter((s) => s.value.seq !== null).length;
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).requestSeq).toBe(training);
    const [row] = await t.db.$queryRaw<{ queued: bigint }[]>`
      SELECT count(*) AS queued FROM graphile_worker.jobs WHERE key = ANY(
        ARRAY(SELECT id FROM "Request" WHERE "teamId" = ${team.id}))`;
    expect(Number(row?.queued)).toBe(30);
  });

  it("holds exactly where inserts switch from the shared to the exclusive lock, above max_connections", async () => {
    const { team, baseModel } = await makeTeamWithAdapter(t.db, "quota-paths");
    const [setting] = await t.db.$queryRaw<{ max_connections: string }[]>`SHOW max_connections`;
    // The first 30 places are taken under the shared lock, the rest under the exclusive one.
    const quota = Number(setting?.max_connections) + 30;
    await t.db.team.update({ where: { id: team.id }, data: { maxQueuedRequests: quota } });
    const settled = await Promise.allSettled(
      Array.from({ length: quota + 70 }, () =>
        enqueueSamplingRequest(t.db, team.id, {
          kind: "SAMPLE",
          baseModelId: baseModel.id,
          adapterId: null,
          payload: { prompt: [1] },
        }),
      ),
    );
    expect(settled.filter((s) => s.status === "fulfilled")).toHaveLength(quota);
    for (const s of settled) if (s.status === "rejected") expect(s.reason).toBeInstanceOf(QuotaExceededError);
    expect(await t.db.request.count({ where: { teamId: team.id } })).toBe(quota);
  });

  it("frees a place when a request finishes", async () => {
    const { team, baseModel } = await makeTeamWithAdapter(t.db, "quota-free");
    await t.db.team.update({ where: { id: team.id }, data: { maxQueuedRequests: 1 } });
    const sample = () =>
      enqueueSamplingRequest(t.db, team.id, {
        kind: "SAMPLE",
        baseModelId: baseModel.id,
        adapterId: null,
        payload: { prompt: [1] },
      });
    const first = await sample();
    await expect(sample()).rejects.toThrow(QuotaExceededError);
    await finishRequest(t.db, first.requestId, { output: {} });
    await expect(sample()).resolves.toMatchObject({ seq: null });
  });
});

describe("claimRequest", () => {
  it("names the job training the adapter, for training calls only, and claims a request once finished never", async () => {
    const { team, adapter, baseModel } = await makeTeamWithAdapter(t.db, "claim-busy");
    await registerWorker(t.db, { host: "h", pid: 4, capacity: 4 });
    const training = await enqueueTrainingRequest(t.db, team.id, call(adapter.id));
    const sample = await enqueueSamplingRequest(t.db, team.id, {
      kind: "SAMPLE",
      baseModelId: baseModel.id,
      adapterId: adapter.id,
      payload: { prompt: [1] },
    });
    expect((await claimRequest(t.db, training.requestId))[0]?.busyJobId).toBeNull();
    const job = await t.db.job.create({
      data: {
        name: "test job",
        teamId: team.id,
        adapterId: adapter.id,
        kind: "RL",
        config: {},
        status: "RUNNING",
      },
    });
    expect((await claimRequest(t.db, training.requestId))[0]?.busyJobId).toBe(job.id);
    expect((await claimRequest(t.db, sample.requestId))[0]?.busyJobId).toBeNull();
    await finishRequest(t.db, sample.requestId, { cancelled: "test" });
    expect(await claimRequest(t.db, sample.requestId)).toEqual([]);
  });
});

describe("finishing and waiting", () => {
  async function sampling(teamId: string, baseModelId: string, requestId: string) {
    return enqueueSamplingRequest(t.db, teamId, {
      kind: "SAMPLE",
      baseModelId,
      adapterId: null,
      payload: { prompt: [1] },
      requestId,
    });
  }

  it("the notice carries a small outcome, so an expected request needs no read back", async () => {
    const { team, baseModel } = await makeTeamWithAdapter(t.db, "notice-small");
    const notices: string[] = [];
    const listener = new PgListener(t.url);
    await listener.subscribe(REQUEST_CHANNEL, (payload) => notices.push(payload));
    const expectation = await waiter.expect("req-small");
    await sampling(team.id, baseModel.id, "req-small");
    await claimRequest(t.db, "req-small");
    await finishRequest(t.db, "req-small", { output: { tokens: [1, 2, 3] } });
    const outcome = await expectation.result(team.id, 5_000);
    expect(outcome).toEqual({
      id: "req-small",
      teamId: team.id,
      kind: "SAMPLE",
      status: "SUCCEEDED",
      output: { tokens: [1, 2, 3] },
      error: null,
    });
    await listener.close();
    expect(JSON.parse(notices.find((n) => n.includes("req-small")) ?? "null")?.output).toEqual({
      tokens: [1, 2, 3],
    });
  });

  it("a large outcome is announced by id and read back; another team gets null", async () => {
    const { team, baseModel } = await makeTeamWithAdapter(t.db, "notice-large");
    const other = await makeTeamWithAdapter(t.db, "notice-other");
    const expectation = await waiter.expect("req-large");
    const theirs = await waiter.expect("req-large");
    await sampling(team.id, baseModel.id, "req-large");
    const big = { logprobs: Array.from({ length: 4000 }, (_, i) => -(i + 1) / 7) };
    await finishRequest(t.db, "req-large", { output: big });
    const [mine, notMine] = await Promise.all([
      expectation.result(team.id, 5_000),
      theirs.result(other.team.id, 5_000),
    ]);
    expect(mine?.status).toBe("SUCCEEDED");
    expect(mine?.output).toEqual(big);
    expect(notMine).toBeNull();
  });

  it("wait returns at once for a finished request and after the timeout for a running one", async () => {
    const { team, baseModel } = await makeTeamWithAdapter(t.db, "wait");
    await sampling(team.id, baseModel.id, "req-done");
    await finishRequest(t.db, "req-done", { error: "bad prompt" });
    expect(await waiter.wait(team.id, "req-done", 60_000)).toMatchObject({
      status: "FAILED",
      error: "bad prompt",
    });
    await sampling(team.id, baseModel.id, "req-pending");
    expect(await waiter.wait(team.id, "req-pending", 50)).toMatchObject({ status: "QUEUED" });
    expect(await waiter.wait(team.id, "no-such-request", 50)).toBeNull();
  });
});
