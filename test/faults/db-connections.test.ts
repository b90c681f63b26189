// Fault 1: the job's database connections are terminated three times while it
// runs (pg_terminate_backend, as an administrator or a failover would). Each time
// the worker is caught inside a step's write (its transaction waits on a short
// lock of "Metric", held only until it is seen waiting), so the fault lands on
// work in flight, and every other connection of the worker (pool, queue, LISTEN)
// dies with it. The job must still end SUCCEEDED with its history whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../control-plane/harness.ts";
import {
  expectIntactRun,
  type FaultPlane,
  finished,
  jobEnded,
  jobRow,
  reachedStep,
  startFaultPlane,
  startRlJob,
  terminateWorkerConnections,
  withTablesLocked,
  workerLockWaits,
} from "./harness.ts";

let plane: FaultPlane;
beforeAll(async () => {
  plane = await startFaultPlane();
}, 60_000);
afterAll(() => plane?.cp.stop());

/** Catches the job's step writing (blocked on "Metric"), terminates the worker's connections, then lets go. */
async function terminateMidStep(jobId: string) {
  return withTablesLocked(plane.cp, ["Metric"], async () => {
    const waiting = await until(
      async () => {
        if (await jobEnded(plane.cp, jobId)) return [];
        const waits = await workerLockWaits(plane.cp);
        return waits.length ? waits : undefined;
      },
      "the job's step to wait on the metric table",
      30_000,
    );
    const { status } = await jobRow(plane.cp, jobId);
    const terminated = waiting.length ? await terminateWorkerConnections(plane.cp) : [];
    return { status, waiting: waiting.map((w) => w.pid), terminated };
  });
}

describe("a job whose database connections are terminated", () => {
  it("ends SUCCEEDED with contiguous steps, nothing stored twice, versions unbroken and its validation curve whole", async () => {
    const job = await startRlJob(plane, "conn-kill");
    const faults: { atStep: number; status: string; waiting: number[]; terminated: number[] }[] = [];
    for (const atStep of [2, 5, 8]) {
      if (!(await reachedStep(plane.cp, job.jobId, atStep))) break;
      const fault = await terminateMidStep(job.jobId);
      if (!fault.terminated.length) break;
      faults.push({ atStep, ...fault });
    }
    await finished(plane.cp, job.jobId);
    await expectIntactRun(plane.cp, job);
    // The faults really hit: three times while the job ran, its step's own transaction among the connections terminated.
    expect(faults).toHaveLength(3);
    for (const fault of faults) {
      expect(fault.status).toBe("RUNNING");
      expect(fault.terminated).toEqual(expect.arrayContaining(fault.waiting));
    }
  }, 240_000);
});
