// A job's progress checkpoints (named by its step: formatJobCheckpointName), saved
// once per name through transient faults: a retry whose first try's row is there
// (its answer was lost) finds it and is done.
import { type Db, findCheckpoint } from "@opentinker/db";
import type { PolicySession } from "@opentinker/engine";
import { formatJobCheckpointName } from "@opentinker/protocol";
import { retryTransient } from "../faults.ts";

export interface CheckpointedJob {
  id: string;
  teamId: string;
  adapterId: string;
}

/** Checkpoints the job's progress after `step` steps; returns the checkpoint's name. */
export async function saveJobCheckpoint(
  db: Db,
  job: CheckpointedJob,
  session: PolicySession,
  step: number,
): Promise<string> {
  const name = formatJobCheckpointName({ jobId: job.id, step });
  await retryTransient(`job ${job.id}: checkpoint after step ${step}`, async () => {
    if (await findCheckpoint(db, job.teamId, job.adapterId, name)) return;
    await session.checkpoint(name, job.id);
  });
  return name;
}
