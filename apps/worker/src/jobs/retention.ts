// When a job ends, what it leaves behind: with "keep-final", its intermediate
// snapshots and checkpoints are deleted (rows and files); the final snapshot and
// the final checkpoint stay loadable. "keep-all" keeps everything.
import type { Db } from "@opentinker/db";
import type { SnapshotStore } from "@opentinker/engine";

export async function applyRetention(
  db: Db,
  store: SnapshotStore,
  jobId: string,
  policy: string,
): Promise<void> {
  if (policy !== "keep-final") return;
  const snapshots = await db.snapshot.findMany({ where: { jobId }, orderBy: { version: "desc" } });
  const checkpoints = await db.checkpoint.findMany({
    where: { jobId },
    orderBy: [{ step: "desc" }, { createdAt: "desc" }],
  });
  const doomed = [...snapshots.slice(1), ...checkpoints.slice(1)];
  await db.$transaction([
    db.snapshot.deleteMany({ where: { id: { in: snapshots.slice(1).map((s) => s.id) } } }),
    db.checkpoint.deleteMany({ where: { id: { in: checkpoints.slice(1).map((c) => c.id) } } }),
  ]);
  // Files go after their rows, so nothing that is still listed is ever missing.
  for (const object of doomed) await store.delete(object.path).catch(() => {});
}
