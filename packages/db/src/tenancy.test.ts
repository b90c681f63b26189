import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteAdapter, getAdapter, listAdapters } from "./adapters.ts";
import { createApiKey, listApiKeys, revokeApiKey } from "./api-keys.ts";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { getJob, listJobs, requestJobCancel } from "./jobs.ts";
import { listMetrics, recordMetrics } from "./metrics.ts";
import { getSnapshotByHandle, latestSnapshot, listSnapshots, publishSnapshot } from "./snapshots.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { insertTrajectories, listTrajectories } from "./trajectories.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

async function populatedTeam(label: string) {
  const fixture = await makeTeamWithAdapter(t.db, label);
  const { team, adapter } = fixture;
  const snapshot = await publishSnapshot(t.db, team.id, {
    adapterId: adapter.id,
    path: `/s/${label}`,
    checksum: "c",
    trainerStep: 1,
  });
  const job = await t.db.job.create({
    data: { name: "test job", teamId: team.id, adapterId: adapter.id, kind: "RL", config: {} },
  });
  await insertTrajectories(t.db, team.id, job.id, [
    {
      step: 1,
      groupIndex: 0,
      sampleIndex: 0,
      snapshotVersion: 1,
      reward: 1,
      tokens: new Int32Array([1, 2]),
      mask: new Uint8Array([0, 1]),
      logprobs: new Float32Array([0, -0.5]),
      advantages: new Float32Array([0, 0.5]),
    },
  ]);
  await recordMetrics(t.db, team.id, job.id, 1, { reward_mean: 0.5 });
  const key = await createApiKey(t.db, team.id, { name: "k" });
  return { ...fixture, snapshot, job, key };
}

describe("tenancy: every query path takes the team", () => {
  it("team A's queries never return team B's rows, and A cannot change B's", async () => {
    const a = await populatedTeam("team-a");
    const b = await populatedTeam("team-b");
    const A = a.team.id;

    expect((await listAdapters(t.db, A)).map((x) => x.id)).toEqual([a.adapter.id]);
    expect(await getAdapter(t.db, A, b.adapter.id)).toBeNull();
    expect(await listSnapshots(t.db, A, b.adapter.id)).toEqual([]);
    expect(await latestSnapshot(t.db, A, b.adapter.id)).toBeNull();
    expect(await getSnapshotByHandle(t.db, A, b.snapshot.handle)).toBeNull();
    expect((await listJobs(t.db, A)).map((x) => x.id)).toEqual([a.job.id]);
    expect(await getJob(t.db, A, b.job.id)).toBeNull();
    expect(await listTrajectories(t.db, A, b.job.id, 1)).toEqual([]);
    expect(await listMetrics(t.db, A, b.job.id)).toEqual([]);
    expect((await listApiKeys(t.db, A)).map((k) => k.id)).toEqual([a.key.id]);

    expect(await requestJobCancel(t.db, A, b.job.id)).toBe(false);
    expect(await revokeApiKey(t.db, A, b.key.id)).toBe(false);
    expect(await deleteAdapter(t.db, A, b.adapter.id)).toBe(false);
    expect(await getAdapter(t.db, b.team.id, b.adapter.id)).not.toBeNull();
    expect((await listApiKeys(t.db, b.team.id))[0]?.revokedAt).toBeNull();
    expect((await getJob(t.db, b.team.id, b.job.id))?.cancelRequestedAt).toBeNull();
  });

  it("the database refuses rows that tie one team's data to another team's adapter or job", async () => {
    const a = await populatedTeam("cross-a");
    const b = await populatedTeam("cross-b");
    await expect(
      publishSnapshot(t.db, a.team.id, {
        adapterId: b.adapter.id,
        path: "/x",
        checksum: "c",
        trainerStep: 1,
      }),
    ).rejects.toThrow(/not found/);
    await expect(
      t.db.snapshot.create({
        data: {
          teamId: a.team.id,
          adapterId: b.adapter.id,
          version: 2,
          handle: "forged",
          path: "/x",
          checksum: "c",
          trainerStep: 1,
        },
      }),
    ).rejects.toThrow();
    await expect(
      t.db.job.create({
        data: { name: "test job", teamId: a.team.id, adapterId: b.adapter.id, kind: "SFT", config: {} },
      }),
    ).rejects.toThrow();
    await expect(recordMetrics(t.db, a.team.id, b.job.id, 1, { loss: 1 })).rejects.toThrow();
    expect(await listMetrics(t.db, b.team.id, b.job.id)).toHaveLength(1);
  });
});
