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

/**
 * The team's adapters that have published, the most recently published first
 * (one entry each, however many versions a job published): each one's latest
 * version (the registry's pointer, C3), how many it has published, and when
 * it last did.
 */
export async function listLatestVersions(db: DbTx, teamId: string, limit: number) {
  const groups = await db.snapshot.groupBy({
    by: ["adapterId"],
    where: { teamId },
    _count: { _all: true },
    _max: { createdAt: true },
    orderBy: { _max: { createdAt: "desc" } },
    take: limit,
  });
  const adapters = await db.adapter.findMany({
    where: { teamId, id: { in: groups.map((g) => g.adapterId) } },
    select: { id: true, name: true, registry: { select: { snapshot: { select: snapshotSelect } } } },
  });
  const byId = new Map(adapters.map((a) => [a.id, a]));
  const entries = [];
  for (const group of groups) {
    const adapter = byId.get(group.adapterId);
    // The registry always points at a version once one is published; the newest one stands in otherwise.
    const latest =
      adapter?.registry?.snapshot ??
      (await db.snapshot.findFirst({
        where: { teamId, adapterId: group.adapterId },
        orderBy: { version: "desc" },
        select: snapshotSelect,
      }));
    if (!adapter || !latest) continue;
    entries.push({
      adapterId: adapter.id,
      adapterName: adapter.name,
      versions: group._count._all,
      lastPublishedAt: group._max.createdAt ?? latest.createdAt,
      latest,
    });
  }
  return entries;
}
