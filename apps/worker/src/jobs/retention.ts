// When a job ends, what it leaves behind: with "keep-final", its intermediate
// snapshots and checkpoints are deleted (rows and files); the final snapshot and
// the final checkpoint stay loadable. "keep-all" keeps everything.
import { type Db, dropIntermediateObjects } from "@opentinker/db";
import type { SnapshotStore } from "@opentinker/engine";

export async function applyRetention(
  db: Db,
  store: SnapshotStore,
  job: { teamId: string; id: string },
  policy: string,
): Promise<void> {
  if (policy !== "keep-final") return;
  const doomed = await dropIntermediateObjects(db, job.teamId, job.id);
  // Files go after their rows, so nothing that is still listed is ever missing.
  for (const path of doomed) await store.delete(path).catch(() => {});
}
