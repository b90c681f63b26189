// When a job ends, what it leaves behind: with "keep-final", its intermediate
// snapshots and checkpoints are deleted; the final snapshot, the final
// checkpoint and any named version (the best) stay loadable. endJobRun drops
// the rows in the transaction that ends the job; the files go here, after.
import type { SnapshotStore } from "@opentinker/engine";
import { DEFAULT_RETENTION, type Retention, ZRetention } from "@opentinker/protocol";

/** The retention a job's stored config names (the default when it names none). */
export function retentionOf(config: unknown): Retention {
  const retention = (config as { retention?: unknown } | null)?.retention;
  return ZRetention.catch(DEFAULT_RETENTION).parse(retention);
}

/** Files go after their rows, so nothing that is still listed is ever missing. */
export async function deleteDroppedFiles(store: SnapshotStore, paths: string[]): Promise<void> {
  for (const path of paths) await store.delete(path).catch(() => {});
}
