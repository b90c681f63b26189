import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { dropIntermediateObjects } from "./job-runs.ts";
import { recordJobStep, rewindJob } from "./job-steps.ts";
import { adapterBestSnapshot, jobBestSnapshot, markBestSnapshot } from "./snapshot-tags.ts";
import { listSnapshots, publishSnapshot } from "./snapshots.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

/** A team's adapter with a job that published `versions` snapshots. */
async function jobWithSnapshots(label: string, versions: number) {
  const { team, adapter } = await makeTeamWithAdapter(t.db, label);
  const job = await t.db.job.create({
    data: { teamId: team.id, adapterId: adapter.id, kind: "RL", config: {}, name: label },
  });
  for (let v = 1; v <= versions; v++)
    await publishSnapshot(t.db, team.id, {
      adapterId: adapter.id,
      path: `/snapshots/${label}/${v}`,
      checksum: `sha256:${v}`,
      trainerStep: v,
      jobId: job.id,
    });
  return { team, adapter, job: { ...job, teamId: team.id } };
}

const METRIC = "val/reward/mean";
const validated = (adapterId: string, version: number, value: number, step: number) => ({
  adapterId,
  version,
  metric: METRIC,
  value,
  step,
});

describe("the best version", () => {
  it("follows the job's best validation so far: a better one moves it, a tie or a worse one does not", async () => {
    const { team, adapter, job } = await jobWithSnapshots("moves", 4);
    for (const [version, value, step, moved] of [
      [1, 0.2, 0, true],
      [2, 0.5, 1, true],
      [3, 0.5, 2, false],
      [4, 0.1, 3, false],
    ] as const)
      expect(await markBestSnapshot(t.db, team.id, job.id, validated(adapter.id, version, value, step))).toBe(
        moved,
      );
    expect(await adapterBestSnapshot(t.db, team.id, adapter.id)).toMatchObject({
      version: 2,
      jobId: job.id,
      metric: METRIC,
      value: 0.5,
      step: 1,
    });
    expect((await jobBestSnapshot(t.db, team.id, job.id))?.version).toBe(2);
    const tags = (await listSnapshots(t.db, team.id, adapter.id)).map((s) => s.tags.map((x) => x.name));
    expect(tags).toEqual([[], ["best"], [], []]);
  });

  it("is set by the next job's first validation whatever its value (metrics of two jobs do not compare)", async () => {
    const { team, adapter, job } = await jobWithSnapshots("next-job", 1);
    await markBestSnapshot(t.db, team.id, job.id, validated(adapter.id, 1, 0.9, 0));
    const second = await t.db.job.create({
      data: { teamId: team.id, adapterId: adapter.id, kind: "RL", config: {}, name: "second" },
    });
    await publishSnapshot(t.db, team.id, {
      adapterId: adapter.id,
      path: "/snapshots/next/2",
      checksum: "sha256:2",
      trainerStep: 2,
      jobId: second.id,
    });
    expect(await markBestSnapshot(t.db, team.id, second.id, validated(adapter.id, 2, 0.1, 0))).toBe(true);
    expect(await adapterBestSnapshot(t.db, team.id, adapter.id)).toMatchObject({
      version: 2,
      jobId: second.id,
    });
    expect(await jobBestSnapshot(t.db, team.id, job.id)).toBeNull();
  });

  it("is never another team's: naming their adapter marks nothing and reads nothing", async () => {
    const { adapter, job } = await jobWithSnapshots("theirs", 1);
    const mine = await makeTeamWithAdapter(t.db, "mine");
    expect(await markBestSnapshot(t.db, mine.team.id, job.id, validated(adapter.id, 1, 1, 0))).toBe(false);
    expect(await adapterBestSnapshot(t.db, mine.team.id, adapter.id)).toBeNull();
    expect(await t.db.snapshotTag.count({ where: { adapterId: adapter.id } })).toBe(0);
  });

  it("is marked in the transaction that stores the step's validation, and keep-final retention keeps it", async () => {
    const { team, adapter, job } = await jobWithSnapshots("retention", 4);
    await recordJobStep(t.db, job, 0, { [METRIC]: 0.7 }, [], validated(adapter.id, 1, 0.7, 0));
    await recordJobStep(t.db, job, 1, { [METRIC]: 0.3 }, [], validated(adapter.id, 3, 0.3, 1));
    await recordJobStep(t.db, job, 2, {}, []);
    const doomed = await dropIntermediateObjects(t.db, team.id, job.id);
    expect(doomed.sort()).toEqual(["/snapshots/retention/2", "/snapshots/retention/3"]);
    const left = await listSnapshots(t.db, team.id, adapter.id);
    expect(left.map((s) => [s.version, s.tags.map((x) => x.name)])).toEqual([
      [1, ["best"]],
      [4, []],
    ]);
  });

  it("is forgotten when its job resumes from a checkpoint older than the validation that chose it", async () => {
    const { team, adapter, job } = await jobWithSnapshots("rewind", 2);
    await recordJobStep(t.db, job, 0, { [METRIC]: 0.1 }, [], validated(adapter.id, 1, 0.1, 0));
    await recordJobStep(t.db, job, 1, { [METRIC]: 0.6 }, [], validated(adapter.id, 2, 0.6, 1));
    await rewindJob(t.db, job, 1, "no-such-checkpoint");
    expect(await adapterBestSnapshot(t.db, team.id, adapter.id)).toBeNull();
  });
});
