// How the jobs pages word a job's faults (issue 44): why it failed (its own
// config or data, or a bug of ours), the transient faults it resumed from, why
// a queued job waits, and which jobs can be resumed. Pure, so the list and the job page agree.
import type { JobInfo } from "@opentinker/protocol";

type Faulted = Pick<JobInfo, "status" | "error" | "errorClass" | "faults" | "lastFault" | "waitingFor">;

const CLASS_TEXT = {
  USER: "user error: the job's config or data",
  INTERNAL: "internal error: a fault of the service",
} as const;

/** The failure's class in words, or null when the job did not fail (or failed before classes were kept). */
export function failureClass(job: Faulted): string | null {
  return job.status === "FAILED" && job.errorClass ? CLASS_TEXT[job.errorClass] : null;
}

/** One line for the jobs list: the class and the start of the message. */
export function failureSummary(job: Faulted, maxChars = 80): string | null {
  if (job.status !== "FAILED" || !job.error) return null;
  const message = job.error.length > maxChars ? `${job.error.slice(0, maxChars - 1)}…` : job.error;
  return job.errorClass ? `${job.errorClass.toLowerCase()} error: ${message}` : message;
}

/** The transient faults a job came back from, or null when none. */
export function faultsNote(job: Faulted): string | null {
  if (job.faults === 0) return null;
  const times = job.faults === 1 ? "once" : `${job.faults} times`;
  const last = job.lastFault ? ` (last: ${job.lastFault})` : "";
  return `Resumed from its last checkpoint ${times} after a transient fault${last}.`;
}

/** Why a queued job has not started, or null. */
export function waitingNote(job: Faulted): string | null {
  return job.status === "QUEUED" && job.waitingFor ? `Waiting for a worker slot: ${job.waitingFor}.` : null;
}

/** A failed or cancelled job can go on from its last checkpoint. */
export const canResume = (job: Pick<JobInfo, "status">) =>
  job.status === "FAILED" || job.status === "CANCELLED";
