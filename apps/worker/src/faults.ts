// How the worker meets a fault (issue 44): its class (protocol/faults.ts), and
// retries with backoff for the transient ones. A transient fault inside a job's
// step is retried here first; past the budget the job goes back to the queue
// and resumes from its last checkpoint (jobs/job-run.ts). Only user and
// internal faults fail anything.
import { isTransientDbError, NotFoundError, QuotaExceededError } from "@opentinker/db";
import { PolicyBudgetError, UnknownHandleError } from "@opentinker/engine";
import { DivergedError, type FaultClass, isNetworkFault } from "@opentinker/protocol";
import { isTransientStoreError } from "@opentinker/store";
import { z } from "zod";

/** Errors a job's own config or data causes (a bad value, a diverged update, an unknown or foreign handle). */
const USER_ERRORS = [
  z.ZodError,
  RangeError,
  DivergedError,
  UnknownHandleError,
  NotFoundError,
  QuotaExceededError,
  PolicyBudgetError,
];

export function classifyFault(error: unknown): FaultClass {
  if (isTransientDbError(error) || isTransientStoreError(error) || isNetworkFault(error)) return "TRANSIENT";
  if (USER_ERRORS.some((kind) => error instanceof kind)) return "USER";
  return "INTERNAL";
}

export interface RetryPlan {
  attempts: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * Within a step: about 15 s of waiting over 7 tries, enough for a dropped
 * connection to come back or a lock to be let go, short enough that a job
 * whose database is gone for longer goes back to the queue instead.
 */
export const STEP_RETRY: RetryPlan = { attempts: 7, firstDelayMs: 250, maxDelayMs: 5_000 };

const delayOf = (plan: RetryPlan, attempt: number) =>
  Math.min(plan.maxDelayMs, plan.firstDelayMs * 2 ** (attempt - 1));

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Runs `work`, again after a backoff while it fails transiently (each retry
 * logged with `what`); any other fault, or the last transient one, is thrown.
 * `work` learns the attempt (from 1), so a retry can first look for what an
 * attempt whose answer was lost already did.
 */
export async function retryTransient<T>(
  what: string,
  work: (attempt: number) => Promise<T>,
  plan: RetryPlan = STEP_RETRY,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work(attempt);
    } catch (error) {
      if (attempt >= plan.attempts || classifyFault(error) !== "TRANSIENT") throw error;
      const delay = delayOf(plan, attempt);
      console.error(
        `worker: ${what}: transient fault (${errorText(error)}); retry ${attempt} in ${delay} ms`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** How long a job that went back to the queue after its `faults`th transient fault waits to resume. */
export function resumeDelayMs(faults: number): number {
  return Math.min(60_000, 1_000 * 2 ** Math.max(0, faults - 1));
}
