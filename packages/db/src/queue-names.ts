// Names shared by the processes that enqueue work and the workers that run it.

/** The NOTIFY channel on which a finished request's id is announced. */
export const REQUEST_CHANNEL = "opentinker_request";

/** Queue task names: what a worker subscribes to. */
export const tasks = {
  train: (workerId: string) => `train:${workerId}`,
  sample: (baseModelId: string) => `sample:${baseModelId}`,
  job: "job",
} as const;

/** The NOTIFY channel on which a job's new metrics are announced ({ teamId, jobId, step }). */
export const METRICS_CHANNEL = "opentinker_metrics";
