import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { PgListener } from "./pg-listener.ts";
import { releaseLostWorker } from "./placement.ts";
import { METRICS_CHANNEL } from "./queue-names.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { registerWorker } from "./workers.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

describe("releaseLostWorker", () => {
  it("marks the worker offline and hands back what it held: adapters free, jobs queued or cancelled, announced", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "release");
    const other = await t.db.adapter.create({
      data: { teamId: team.id, baseModelId: adapter.baseModelId, name: "other", kind: "LORA", rank: 2 },
    });
    const worker = await registerWorker(t.db, { host: "h", pid: 1, capacity: 4 });
    await t.db.adapter.updateMany({
      where: { id: { in: [adapter.id, other.id] } },
      data: { workerId: worker.id },
    });
    const running = await t.db.job.create({
      data: {
        name: "test job",
        teamId: team.id,
        adapterId: adapter.id,
        kind: "RL",
        config: {},
        status: "RUNNING",
        workerId: worker.id,
      },
    });
    const cancelling = await t.db.job.create({
      data: {
        name: "test job",
        teamId: team.id,
        adapterId: other.id,
        kind: "RL",
        config: {},
        status: "RUNNING",
        workerId: worker.id,
        cancelRequestedAt: new Date(),
      },
    });
    const notices: string[] = [];
    const listener = new PgListener(t.url);
    await listener.subscribe(METRICS_CHANNEL, (payload) => notices.push(payload));

    await releaseLostWorker(t.db, worker.id);

    expect((await t.db.worker.findUniqueOrThrow({ where: { id: worker.id } })).status).toBe("OFFLINE");
    expect(await t.db.adapter.count({ where: { workerId: worker.id } })).toBe(0);
    expect(await t.db.job.findUniqueOrThrow({ where: { id: running.id } })).toMatchObject({
      status: "QUEUED",
      workerId: null,
      finishedAt: null,
    });
    const cancelled = await t.db.job.findUniqueOrThrow({ where: { id: cancelling.id } });
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled.finishedAt).not.toBeNull();
    for (let waited = 0; notices.length < 2 && waited < 5_000; waited += 20)
      await new Promise((r) => setTimeout(r, 20));
    await listener.close();
    expect(notices.map((n) => JSON.parse(n)).sort((x, y) => x.status.localeCompare(y.status))).toEqual([
      { teamId: team.id, jobId: cancelling.id, status: "CANCELLED" },
      { teamId: team.id, jobId: running.id, status: "QUEUED" },
    ]);
    // Releasing it again (npm start after a clean drain) changes nothing.
    await releaseLostWorker(t.db, worker.id);
    expect((await t.db.job.findUniqueOrThrow({ where: { id: running.id } })).status).toBe("QUEUED");
  });
});
