// A job's step is stored once: a retry after a lost answer (the commit went
// through, its acknowledgement did not) stores nothing twice, and a step out of
// order is refused rather than stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { recordJobStep } from "./job-steps.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const trajectory = (step: number) => ({
  tokens: new Int32Array([1, 2, 3]),
  mask: new Uint8Array([0, 1, 1]),
  logprobs: new Float32Array([0, -0.5, -0.25]),
  advantages: new Float32Array([0, 1, 1]),
  step,
  groupIndex: 0,
  sampleIndex: 0,
  snapshotVersion: 1,
  staleness: 0,
  reward: 1,
});

async function makeJob(label: string) {
  const { team, adapter } = await makeTeamWithAdapter(t.db, label);
  const job = await t.db.job.create({
    data: { name: label, teamId: team.id, adapterId: adapter.id, kind: "RL", config: {} },
  });
  return { teamId: team.id, id: job.id };
}

describe("recordJobStep", () => {
  it("stores a step sent again (a retry after a lost answer) once", async () => {
    const job = await makeJob("step-retry");
    await recordJobStep(t.db, job, 0, { "reward/mean": 0.5 }, [trajectory(0)]);
    await recordJobStep(t.db, job, 0, { "reward/mean": 0.5 }, [trajectory(0)]);
    await recordJobStep(t.db, job, 1, { "reward/mean": 0.75 }, [trajectory(1)]);
    await recordJobStep(t.db, job, 0, { "reward/mean": 0.5 }, [trajectory(0)]);
    expect((await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).step).toBe(2);
    expect(await t.db.metric.count({ where: { jobId: job.id } })).toBe(2);
    expect(await t.db.trajectory.count({ where: { jobId: job.id } })).toBe(2);
  });

  it("refuses a step beyond the next one, storing nothing of it", async () => {
    const job = await makeJob("step-gap");
    await expect(recordJobStep(t.db, job, 2, { "reward/mean": 1 }, [trajectory(2)])).rejects.toThrow(
      /step 2 is not the next step to store \(the job is at 0\)/,
    );
    expect(await t.db.metric.count({ where: { jobId: job.id } })).toBe(0);
    expect(await t.db.trajectory.count({ where: { jobId: job.id } })).toBe(0);
  });
});
