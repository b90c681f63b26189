import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { latestSnapshot, listSnapshots, publishSnapshot } from "./snapshots.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const snap = (step: number) => ({
  path: `/snapshots/${step}`,
  checksum: `sha256:${step}`,
  trainerStep: step,
});

describe("snapshots", () => {
  it("publishes contiguous versions 1, 2, 3 with opaque handles and moves the registry", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "contiguous");
    const published = [];
    for (const step of [10, 20, 30])
      published.push(await publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(step) }));
    expect(published.map((s) => s.version)).toEqual([1, 2, 3]);
    expect(published[2]?.handle).toBe(`opentinker://${team.slug}/${adapter.id}/sampler/3`);
    expect((await latestSnapshot(t.db, team.id, adapter.id))?.version).toBe(3);
  });

  it("concurrent publishers of one adapter get distinct, contiguous versions", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "concurrent");
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(i) }),
      ),
    );
    const versions = (await listSnapshots(t.db, team.id, adapter.id)).map((s) => s.version);
    // Every successful publish got its own version and no number was skipped.
    expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
    expect(versions.length).toBe(results.filter((r) => r.status === "fulfilled").length);
  });

  it("the database rejects any update of a snapshot's content, through Prisma or raw SQL", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "immutable");
    const s = await publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(1) });
    await expect(
      t.db.snapshot.update({ where: { id: s.id }, data: { checksum: "sha256:forged" } }),
    ).rejects.toThrow(/immutable/);
    await expect(
      t.db.$executeRawUnsafe(`UPDATE "Snapshot" SET "path" = '/elsewhere' WHERE id = $1`, s.id),
    ).rejects.toThrow(/immutable/);
    await expect(
      t.db.$executeRawUnsafe(`UPDATE "Snapshot" SET "version" = 7 WHERE id = $1`, s.id),
    ).rejects.toThrow(/immutable/);
    const after = await t.db.snapshot.findUniqueOrThrow({ where: { id: s.id } });
    expect([after.path, after.checksum, after.version]).toEqual(["/snapshots/1", "sha256:1", 1]);
  });

  it("rejects a duplicate or skipped version written directly, and never reuses a deleted version", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "versions");
    const v1 = await publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(1) });
    const direct = (version: number) =>
      t.db.snapshot.create({
        data: {
          teamId: team.id,
          adapterId: adapter.id,
          version,
          handle: `h-${version}-${Math.random()}`,
          ...snap(version),
        },
      });
    await expect(direct(1)).rejects.toThrow(/not the next version/);
    await expect(direct(3)).rejects.toThrow(/not the next version/);
    const v2 = await publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(2) });
    await t.db.snapshot.delete({ where: { id: v2.id } });
    const v3 = await publishSnapshot(t.db, team.id, { adapterId: adapter.id, ...snap(3) });
    expect([v1.version, v2.version, v3.version]).toEqual([1, 2, 3]);
  });

  it("deleting the job that produced a snapshot keeps the snapshot", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "job-delete");
    const job = await t.db.job.create({
      data: { name: "test job", teamId: team.id, adapterId: adapter.id, kind: "RL", config: {} },
    });
    const s = await publishSnapshot(t.db, team.id, { adapterId: adapter.id, jobId: job.id, ...snap(1) });
    await t.db.job.delete({ where: { id: job.id } });
    const after = await t.db.snapshot.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.jobId).toBeNull();
    expect(after.checksum).toBe(s.checksum);
  });
});
