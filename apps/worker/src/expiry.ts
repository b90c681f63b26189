// Saved weights whose TTL ran out: every reader stops seeing them at once (the
// queries filter them), and a worker deletes them soon after, rows first and
// then files, so nothing listed is ever missing its files.
import { type Db, dropExpiredSavedWeights } from "@opentinker/db";
import type { ObjectStore } from "@opentinker/store";
import { deleteDroppedFiles } from "./jobs/retention.ts";

/** How often a worker looks for expired objects (it runs on heartbeat ticks). */
const SWEEP_EVERY_MS = 10_000;

export function expirySweeper(db: Db, store: ObjectStore) {
  let last = 0;
  return async (): Promise<void> => {
    if (Date.now() - last < SWEEP_EVERY_MS) return;
    last = Date.now();
    await deleteDroppedFiles(store, await dropExpiredSavedWeights(db));
  };
}
