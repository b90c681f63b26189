import { formatSamplerHandle } from "@opentinker/protocol";
import { modelLimitsSelect } from "./base-models.ts";
import type { Db, DbTx } from "./client.ts";
import { NotFoundError } from "./errors.ts";
import { snapshotSelect } from "./selects.ts";

export interface PublishSnapshotInput {
  adapterId: string;
  path: string;
  checksum: string;
  trainerStep: number;
  jobId?: string;
  /** When it may be deleted (a TTL its owner set); absent: kept until deleted. */
  expiresAt?: Date | null;
}

/**
 * Publishes the next immutable version of an adapter and moves the registry
 * pointer to it, atomically (the database allocates and checks the version).
 */
export function publishSnapshot(db: Db, teamId: string, input: PublishSnapshotInput) {
  return db.$transaction(async (tx) => {
    const adapter = await tx.adapter.findFirst({
      where: { id: input.adapterId, teamId },
      select: { id: true, team: { select: { slug: true } }, registry: { select: { version: true } } },
    });
    if (!adapter) throw new NotFoundError(`publishSnapshot: adapter ${input.adapterId} not found`);
    const version = (adapter.registry?.version ?? 0) + 1;
    return tx.snapshot.create({
      data: {
        teamId,
        adapterId: adapter.id,
        jobId: input.jobId ?? null,
        version,
        handle: formatSamplerHandle({ team: adapter.team.slug, adapter: adapter.id, version }),
        path: input.path,
        checksum: input.checksum,
        trainerStep: input.trainerStep,
        expiresAt: input.expiresAt ?? null,
      },
      select: snapshotSelect,
    });
  });
}

/**
 * The adapter's snapshot stored at `path`, or null: a publish retried after a
 * lost answer finds the version its first try allocated instead of taking another.
 */
export function snapshotAtPath(db: DbTx, teamId: string, adapterId: string, path: string) {
  return db.snapshot.findFirst({ where: { teamId, adapterId, path }, select: snapshotSelect });
}

export function listSnapshots(db: Db, teamId: string, adapterId: string) {
  return db.snapshot.findMany({
    where: { teamId, adapterId },
    select: snapshotSelect,
    orderBy: { version: "asc" },
  });
}

/** The team's snapshot with this handle, or null (another team's answers the same). */
export function getSnapshotByHandle(db: DbTx, teamId: string, handle: string) {
  return db.snapshot.findFirst({ where: { teamId, handle }, select: snapshotSelect });
}

/** The team's snapshot with this handle and its base model's name, or null. */
export async function snapshotInfo(db: DbTx, teamId: string, handle: string) {
  const row = await db.snapshot.findFirst({
    where: { teamId, handle },
    select: { ...snapshotSelect, adapter: { select: { baseModel: { select: { name: true } } } } },
  });
  if (!row) return null;
  const { adapter, ...snapshot } = row;
  return { ...snapshot, baseModel: adapter.baseModel.name };
}

/**
 * What a team may sample: its own snapshots, and other teams' while their
 * owners publish them (read-only); never an expired one.
 */
const sampleable = (teamId: string, handle: string) => ({
  handle,
  OR: [{ teamId }, { publishedAt: { not: null } }],
  AND: [{ OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }] }],
});

/**
 * A snapshot the team may sample with this handle and the base model it samples
 * over, or null. `adapterId` is set only for the team's own (a request of the
 * team never names another team's adapter).
 */
export async function snapshotPolicy(db: DbTx, teamId: string, handle: string) {
  const row = await db.snapshot.findFirst({
    where: sampleable(teamId, handle),
    select: {
      teamId: true,
      adapterId: true,
      adapter: { select: { baseModel: { select: modelLimitsSelect } } },
    },
  });
  if (!row) return null;
  return { adapterId: row.teamId === teamId ? row.adapterId : null, baseModel: row.adapter.baseModel };
}

/** A snapshot the team may sample with this handle (its own, or a published one), or null. */
export function sampleableSnapshot(db: DbTx, teamId: string, handle: string) {
  return db.snapshot.findFirst({ where: sampleable(teamId, handle), select: snapshotSelect });
}

/** C3: the registry's latest published snapshot of an adapter, or null. */
export async function latestSnapshot(db: Db, teamId: string, adapterId: string) {
  const entry = await db.snapshotRegistry.findFirst({
    where: { teamId, adapterId },
    select: { snapshot: { select: snapshotSelect } },
  });
  return entry?.snapshot ?? null;
}

/**
 * Marks a job's snapshots published after `after` superseded, and points each
 * adapter's registry entry back at its newest snapshot that is not.
 */
export async function supersedeSnapshots(
  tx: DbTx,
  job: { teamId: string; id: string },
  after: Date,
): Promise<number> {
  const doomed = await tx.snapshot.findMany({
    where: { teamId: job.teamId, jobId: job.id, supersededAt: null, createdAt: { gt: after } },
    select: { id: true, adapterId: true },
  });
  if (doomed.length === 0) return 0;
  await tx.snapshot.updateMany({
    where: { id: { in: doomed.map((s) => s.id) } },
    data: { supersededAt: new Date() },
  });
  for (const adapterId of new Set(doomed.map((s) => s.adapterId))) {
    const surviving = await tx.snapshot.findFirst({
      where: { teamId: job.teamId, adapterId, supersededAt: null },
      orderBy: { version: "desc" },
      select: { id: true },
    });
    // The version counter stays where it is: a superseded number is never reused.
    await tx.snapshotRegistry.updateMany({
      where: { teamId: job.teamId, adapterId },
      data: { snapshotId: surviving?.id ?? null },
    });
  }
  return doomed.length;
}
