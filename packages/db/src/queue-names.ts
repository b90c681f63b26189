// Names shared by the processes that enqueue work and the workers that run it.

/** The NOTIFY channel on which a finished request is announced: its outcome as JSON, or its id. */
export const REQUEST_CHANNEL = "opentinker_request";

/** Prefix of a worker's training task (SQL builds the name too). */
export const TRAIN_TASK_PREFIX = "train:";

/** Queue task names: what a worker subscribes to. */
export const tasks = {
  train: (workerId: string) => `${TRAIN_TASK_PREFIX}${workerId}`,
  sample: (baseModelId: string) => `sample:${baseModelId}`,
  job: "job",
} as const;

/** The NOTIFY channel on which a job's new metrics are announced ({ teamId, jobId, step }). */
export const METRICS_CHANNEL = "opentinker_metrics";

/**
 * The NOTIFY channel on which revoked access is announced (database triggers):
 * `{ apiKeyId }` for a revoked or deleted key, `{ sessionId }` for an ended session.
 */
export const ACCESS_CHANNEL = "opentinker_access";
