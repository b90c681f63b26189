// What an adapter has produced, as the API lists it: its published versions
// and its saved training states. Each lookup is within the caller's team; null
// when the team has no such adapter (another team's answers the same).
import type { Db, DbTx } from "./client.ts";
import { checkpointSelect, snapshotSelect } from "./selects.ts";
import { listSnapshots } from "./snapshots.ts";

function findAdapter(db: DbTx, teamId: string, adapterId: string) {
  return db.adapter.findFirst({
    where: { id: adapterId, teamId },
    select: { id: true, team: { select: { slug: true } } },
  });
}

/** The adapter's published versions, oldest first, or null. */
export async function listAdapterVersions(db: Db, teamId: string, adapterId: string) {
  if (!(await findAdapter(db, teamId, adapterId))) return null;
  return listSnapshots(db, teamId, adapterId);
}

/** The team's latest published versions of any adapter, newest first, with the adapter's name. */
export function listRecentSnapshots(db: DbTx, teamId: string, limit: number) {
  return db.snapshot.findMany({
    where: { teamId },
    orderBy: { createdAt: "desc" },
    take: limit,
    select: { ...snapshotSelect, adapter: { select: { name: true } } },
  });
}

/** The adapter's saved states, by step, with what their paths are made of; or null. */
export async function listAdapterCheckpoints(db: DbTx, teamId: string, adapterId: string) {
  const adapter = await findAdapter(db, teamId, adapterId);
  if (!adapter) return null;
  const checkpoints = await db.checkpoint.findMany({
    where: { teamId, adapterId: adapter.id },
    orderBy: [{ step: "asc" }, { createdAt: "asc" }],
    select: checkpointSelect,
  });
  return { teamSlug: adapter.team.slug, adapterId: adapter.id, checkpoints };
}
