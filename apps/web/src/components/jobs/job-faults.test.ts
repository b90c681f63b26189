import { describe, expect, it } from "vitest";
import { canResume, failureClass, failureSummary, faultsNote, waitingNote } from "./job-faults.ts";

const job = {
  status: "FAILED" as const,
  error: "config.steps: too many",
  errorClass: "USER" as const,
  faults: 0,
  lastFault: null,
  waitingFor: null,
};

describe("a job's faults in words", () => {
  it("names a failure's class, on the page and in the list", () => {
    expect(failureClass(job)).toBe("user error: the job's config or data");
    expect(failureClass({ ...job, errorClass: "INTERNAL" })).toBe("internal error: a fault of the service");
    expect(failureSummary(job)).toBe("user error: config.steps: too many");
    expect(failureSummary({ ...job, error: "x".repeat(100) }, 10)).toBe("user error: xxxxxxxxx…");
  });

  it("says nothing of a failure for a job that did not fail", () => {
    expect(failureClass({ ...job, status: "SUCCEEDED" })).toBeNull();
    expect(failureSummary({ ...job, status: "CANCELLED" })).toBeNull();
  });

  it("counts the transient faults a job resumed from, with the last one", () => {
    expect(faultsNote(job)).toBeNull();
    expect(faultsNote({ ...job, faults: 1, lastFault: "connection lost" })).toBe(
      "Resumed from its last checkpoint once after a transient fault (last: connection lost).",
    );
    expect(faultsNote({ ...job, faults: 3 })).toContain("3 times");
  });

  it("says why a queued job waits, and nothing once it runs", () => {
    const queued = {
      ...job,
      status: "QUEUED" as const,
      waitingFor: "the team holds 2 slots, its share is 2",
    };
    expect(waitingNote(queued)).toBe("Waiting for a worker slot: the team holds 2 slots, its share is 2.");
    expect(waitingNote({ ...queued, status: "RUNNING" })).toBeNull();
  });

  it("resumes only failed and cancelled jobs", () => {
    expect(canResume({ status: "FAILED" })).toBe(true);
    expect(canResume({ status: "CANCELLED" })).toBe(true);
    for (const status of ["QUEUED", "RUNNING", "SUCCEEDED"] as const)
      expect(canResume({ status })).toBe(false);
  });
});
