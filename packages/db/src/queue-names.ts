// NOTIFY channels shared by the processes that enqueue work and the workers that
// run it (the queue tasks themselves are declared in queue-tasks.ts).

/** The NOTIFY channel on which a finished request is announced: its outcome as JSON, or its id. */
export const REQUEST_CHANNEL = "opentinker_request";

/** The NOTIFY channel on which a job's new metrics are announced ({ teamId, jobId, step }). */
export const METRICS_CHANNEL = "opentinker_metrics";

/**
 * The NOTIFY channel on which revoked access is announced (database triggers):
 * `{ apiKeyId }` for a revoked or deleted key, `{ sessionId }` for an ended session.
 */
export const ACCESS_CHANNEL = "opentinker_access";
