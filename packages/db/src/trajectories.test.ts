import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { insertTrajectories, listTrajectories } from "./trajectories.ts";
import { decodeTrajectoryArrays, encodeTrajectoryArrays } from "./trajectory-codec.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const arrays = () => ({
  tokens: new Int32Array([5, 900_000, -1 >>> 1, 7]),
  mask: new Uint8Array([0, 1, 1, 0]),
  logprobs: new Float32Array([0, -0.25, -3.5, 0]),
  advantages: new Float32Array([0, 0, 0, 0]), // zero advantage on action tokens is legitimate
});

describe("trajectory arrays", () => {
  it("round-trip exactly through the compact encoding", () => {
    const original = arrays();
    const decoded = decodeTrajectoryArrays(encodeTrajectoryArrays(original));
    expect(decoded).toEqual(original);
  });

  it("reject arrays whose lengths disagree, naming the field", () => {
    expect(() => encodeTrajectoryArrays({ ...arrays(), logprobs: new Float32Array(3) })).toThrow(
      /logprobs has 3 entries, tokens has 4/,
    );
    expect(() => encodeTrajectoryArrays({ ...arrays(), mask: new Uint8Array([0, 2, 1, 0]) })).toThrow(
      /mask\[1\] is 2/,
    );
  });

  it("are stored and read back per job and step, and a retried insert stores nothing twice", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "traj");
    const job = await t.db.job.create({
      data: { name: "test job", teamId: team.id, adapterId: adapter.id, kind: "RL", config: {} },
    });
    const batch = [0, 1].map((sampleIndex) => ({
      ...arrays(),
      step: 3,
      groupIndex: 0,
      sampleIndex,
      snapshotVersion: 2,
      staleness: 1,
      reward: sampleIndex,
    }));
    expect(await insertTrajectories(t.db, team.id, job.id, batch)).toBe(2);
    expect(await insertTrajectories(t.db, team.id, job.id, batch)).toBe(0);
    const stored = await listTrajectories(t.db, team.id, job.id, 3);
    expect(stored).toHaveLength(2);
    expect(stored[1]?.tokens).toEqual(arrays().tokens);
    expect(stored[1]?.mask).toEqual(arrays().mask);
    expect(stored[1]?.snapshotVersion).toBe(2);
    expect(stored[1]?.staleness).toBe(1);
  });

  it("a trajectory whose stored bytes disagree with its token count is refused by the database", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "traj-check");
    const job = await t.db.job.create({
      data: { name: "test job", teamId: team.id, adapterId: adapter.id, kind: "RL", config: {} },
    });
    const encoded = encodeTrajectoryArrays(arrays());
    await expect(
      t.db.trajectory.create({
        data: {
          teamId: team.id,
          jobId: job.id,
          step: 0,
          groupIndex: 0,
          sampleIndex: 0,
          snapshotVersion: 1,
          reward: 0,
          ...encoded,
          tokenCount: 5,
        },
      }),
    ).rejects.toThrow(/Trajectory_arrays_length_check/);
  });
});
