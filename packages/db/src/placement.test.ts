import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdapter } from "./adapters.ts";
import { registerBaseModel } from "./base-models.ts";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { claimJobRun } from "./job-runs.ts";
import { PgListener } from "./pg-listener.ts";
import { AdapterTooLargeError, NoWorkerError, placeAdapter, releaseLostWorker } from "./placement.ts";
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

describe("placement by memory", () => {
  it("fits adapters' training state within a worker's adapter memory, and names one too large for any", async () => {
    const { team } = await makeTeamWithAdapter(t.db, "memory");
    const base = await registerBaseModel(t.db, {
      name: "memory/base",
      path: "/models/memory",
      architecture: "LlamaForCausalLM",
      vocabSize: 64,
      contextLength: 128,
      attnParamsPerRank: 1000,
      mlpParamsPerRank: 2000,
      unembedParamsPerRank: 100,
      parameters: 1e6,
    });
    const lora = (name: string) =>
      createAdapter(t.db, team.id, { name, baseModelId: base.id, kind: "LORA", rank: 16, alpha: 32 });
    const [a, b, c] = [await lora("a"), await lora("b"), await lora("c")];
    const full = await createAdapter(t.db, team.id, { name: "full", baseModelId: base.id, kind: "FULL" });
    // 16 bytes (weights, gradient, two moments) × rank 16 × (attention + MLP).
    const stored = await t.db.adapter.findMany({
      where: { id: { in: [a.id, full.id] } },
      orderBy: { name: "asc" },
    });
    expect(stored.map((r) => r.stateBytes)).toEqual([16 * 16 * 3000, 16 * 1e6]);
    // Ten slots but 2 MiB: two of the 768 kB adapters fit, not three.
    const worker = await registerWorker(t.db, {
      host: "memory",
      pid: 2,
      capacity: 10,
      loadedModels: ["memory/base"],
      adapterMemoryMiB: 2,
    });
    const place = (id: string) => t.db.$transaction((tx) => placeAdapter(tx, id));
    expect(await place(a.id)).toBe(worker.id);
    expect(await place(b.id)).toBe(worker.id);
    await expect(place(c.id)).rejects.toThrow(NoWorkerError);
    await expect(place(c.id)).rejects.toThrow(/free slot and the adapter memory/);
    // 16 MB of full-parameter state fits no worker even empty: an error no retry cures.
    await expect(place(full.id)).rejects.toThrow(AdapterTooLargeError);
    await expect(place(full.id)).rejects.toThrow(
      /needs 16 MiB, more than any online worker's adapter memory \(at most 2 MiB/,
    );
    // A job over it fails as the job's own fault, saying why, instead of waiting for ever.
    const job = await t.db.job.create({
      data: {
        name: "too big",
        teamId: team.id,
        adapterId: full.id,
        kind: "RL",
        config: {},
        status: "QUEUED",
      },
    });
    expect(await claimJobRun(t.db, job.id, worker.id)).toBeNull();
    expect(await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).toMatchObject({
      status: "FAILED",
      errorClass: "USER",
      error: expect.stringMatching(/needs 16 MiB, more than worker .*'s adapter memory \(2 MiB/),
    });
    // One leaves: the third fits.
    await t.db.adapter.update({ where: { id: a.id }, data: { workerId: null } });
    expect(await place(c.id)).toBe(worker.id);
    await releaseLostWorker(t.db, worker.id);
  });

  it("charges adapters made before their base model's sizes were known once it is registered with them", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "unsized");
    const row = await t.db.baseModel.findUniqueOrThrow({ where: { id: adapter.baseModelId } });
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).stateBytes).toBeNull();
    await registerBaseModel(t.db, {
      ...row,
      attnParamsPerRank: 10,
      mlpParamsPerRank: 20,
      unembedParamsPerRank: 5,
      parameters: 500,
      checksum: row.checksum ?? undefined,
    });
    // Rank 8 over attention and MLP.
    expect((await t.db.adapter.findUniqueOrThrow({ where: { id: adapter.id } })).stateBytes).toBe(
      16 * 8 * 30,
    );
    expect(team.id).toBeTruthy();
  });
});
