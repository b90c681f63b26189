// When a job ends, what it leaves behind: with "keep-final", its intermediate
// snapshots and checkpoints are deleted; the final snapshot, the final
// checkpoint and any named version (the best) stay loadable. endJobRun drops
// the rows in the transaction that ends the job; the files go here, after.
import { DEFAULT_RETENTION, type Retention, ZRetention } from "@opentinker/protocol";
import type { ObjectStore } from "@opentinker/store";

/** The retention a job's stored config names (the default when it names none). */
export function retentionOf(config: unknown): Retention {
  const retention = (config as { retention?: unknown } | null)?.retention;
  return ZRetention.catch(DEFAULT_RETENTION).parse(retention);
}

/**
 * Objects go after their rows, so nothing that is still listed is ever missing.
 * One that cannot be deleted (the store unreachable after its retries) is
 * named in the log and left: no row names it any more.
 */
export async function deleteDroppedFiles(
  store: ObjectStore,
  paths: string[],
  log: (line: string) => void = console.error,
): Promise<void> {
  for (const path of paths)
    await store
      .delete(path)
      .catch((error: unknown) =>
        log(`worker: retention could not delete ${path}: ${(error as Error).message}`),
      );
}
