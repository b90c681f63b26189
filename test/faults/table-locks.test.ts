// Fault 2: the tables a step writes ("Metric" and "Trajectory") are locked by
// another session for 6 s, longer than the worker's transactions may run (4 s
// here, 30 s by default: the fault is the same, sooner), then released (a long migration, a VACUUM FULL, a stuck report). The
// job's step is due meanwhile and blocks on the lock; once it is released the
// job must go on and end SUCCEEDED with its history whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectIntactRun,
  type FaultPlane,
  finished,
  JOB,
  jobRow,
  reachedStep,
  startFaultPlane,
  startRlJob,
  withTablesLocked,
  workerLockWaits,
} from "./harness.ts";

const HOLD_MS = 6_000;
const TRANSACTION_TIMEOUT_MS = 4_000;

let plane: FaultPlane;
beforeAll(async () => {
  plane = await startFaultPlane({
    workerEnv: { DATABASE_TRANSACTION_TIMEOUT_MS: String(TRANSACTION_TIMEOUT_MS) },
  });
}, 60_000);
afterAll(() => plane?.cp.stop());

describe("a job whose step tables are locked for longer than its transaction's wait", () => {
  it("ends SUCCEEDED with contiguous steps, nothing stored twice, versions unbroken and its validation curve whole", async () => {
    const job = await startRlJob(plane, "table-lock");
    expect(await reachedStep(plane.cp, job.jobId, 3)).toBe(true);
    const held = await withTablesLocked(plane.cp, ["Metric", "Trajectory"], async () => {
      const before = await jobRow(plane.cp, job.jobId);
      let waited = false;
      const end = Date.now() + HOLD_MS;
      while (Date.now() < end) {
        waited ||= (await workerLockWaits(plane.cp)).length > 0;
        await new Promise((r) => setTimeout(r, 100));
      }
      return { before, after: await jobRow(plane.cp, job.jobId), waited };
    });
    await finished(plane.cp, job.jobId);
    await expectIntactRun(plane.cp, job);
    // The fault really hit: steps were due (the job was mid-run), its writes waited, and none got through.
    expect(held.before.status).toBe("RUNNING");
    expect(held.before.step).toBeLessThan(JOB.steps);
    expect(held.waited).toBe(true);
    expect(held.after.step).toBe(held.before.step);
  }, 240_000);
});
