// The queue task that runs a server-side job (queueTasks.job): validate the
// payload, then run the job on this worker (jobs/job-run.ts).
import { type Db, queueTasks } from "@opentinker/db";
import type { Task } from "graphile-worker";
import type { EngineHost } from "../engine-host.ts";
import { runQueuedJob } from "../jobs/job-run.ts";

export function jobTask(db: Db, host: EngineHost, workerId: string): Task {
  return (payload) => runQueuedJob(db, host, workerId, queueTasks.job.payload.parse(payload).jobId);
}
