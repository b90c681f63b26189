// When a job ends, what it leaves behind: with "keep-final", its intermediate
// snapshots and checkpoints are deleted; the final snapshot, the final
// checkpoint and any named version (the best) stay loadable. endJobRun drops
// the rows in the transaction that ends the job; the files go here, after.
import type { SnapshotStore } from "@opentinker/engine";

/** The retention a job's stored config names ("keep-final" when it names none). */
export function retentionOf(config: unknown): string {
  const retention = (config as { retention?: unknown } | null)?.retention;
  return typeof retention === "string" ? retention : "keep-final";
}

/** Files go after their rows, so nothing that is still listed is ever missing. */
export async function deleteDroppedFiles(store: SnapshotStore, paths: string[]): Promise<void> {
  for (const path of paths) await store.delete(path).catch(() => {});
}
