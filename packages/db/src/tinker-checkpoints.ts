// A training run's saved weights as the Tinker protocol names them: training
// checkpoints (our Checkpoint rows, `weights/<name>`) and sampler checkpoints
// (our Snapshots, `sampler_weights/<name>`: the name a saveWeightsForSampler call
// gave, the latest snapshot of that name; a snapshot no call named, such as a
// job's, is `version-<n>`). Every query is within the caller's team; a reader
// may also see other teams' published objects, never change them. Expired
// objects are gone for every reader at once (the worker deletes them later).
import type { DbTx } from "./client.ts";
import { Prisma } from "./generated/prisma/client.ts";
import { policySpecSelect } from "./selects.ts";

export type CheckpointKind = "training" | "sampler";

export interface SavedWeightsRow {
  kind: CheckpointKind;
  teamId: string;
  adapterId: string;
  name: string;
  createdAt: Date;
  sizeBytes: number | null;
  publishedAt: Date | null;
  expiresAt: Date | null;
}

/** Who reads: a team, and whether other teams' published objects count too. */
export interface Reader {
  teamId: string;
  published?: boolean;
}

const VERSION_NAME = /^version-([1-9][0-9]{0,9})$/;

const visible = (alias: string, reader: Reader) =>
  Prisma.sql`(${Prisma.raw(`${alias}."teamId"`)} = ${reader.teamId} ${
    reader.published ? Prisma.sql`OR ${Prisma.raw(`${alias}."publishedAt"`)} IS NOT NULL` : Prisma.empty
  }) AND (${Prisma.raw(`${alias}."expiresAt"`)} IS NULL OR ${Prisma.raw(`${alias}."expiresAt"`)} > now())`;

/**
 * Every snapshot with its Tinker name. The latest snapshot of a name owns it;
 * older snapshots of a name are not listed (they stay in the adapter's history).
 */
const namedSnapshots = (reader: Reader, adapterId: string | null) => Prisma.sql`
  SELECT s.*, COALESCE(n.name, 'version-' || s.version) AS name
  FROM "Snapshot" s
  LEFT JOIN LATERAL (
    SELECT r.input->>'name' AS name, r.seq,
      (SELECT max(r2.seq) FROM "Request" r2
        WHERE r2."adapterId" = r."adapterId" AND r2.kind = 'SAVE_WEIGHTS_FOR_SAMPLER'
          AND r2.status = 'SUCCEEDED' AND r2.input->>'name' = r.input->>'name') AS latest
    FROM "Request" r
    WHERE r."adapterId" = s."adapterId" AND r.kind = 'SAVE_WEIGHTS_FOR_SAMPLER'
      AND r.status = 'SUCCEEDED' AND r.output->>'handle' = s.handle
    LIMIT 1
  ) n ON true
  WHERE ${visible("s", reader)}
    ${adapterId === null ? Prisma.empty : Prisma.sql`AND s."adapterId" = ${adapterId}`}
    AND (n.name IS NULL OR n.seq = n.latest)`;

const savedWeights = (reader: Reader, adapterId: string | null) => Prisma.sql`
  SELECT 'sampler' AS kind, "teamId", "adapterId", name, "createdAt", NULL::bigint AS "sizeBytes",
    "publishedAt", "expiresAt"
  FROM (${namedSnapshots(reader, adapterId)}) named
  UNION ALL
  SELECT 'training' AS kind, c."teamId", c."adapterId", c.name, c."createdAt", c."sizeBytes",
    c."publishedAt", c."expiresAt"
  FROM "Checkpoint" c
  WHERE ${visible("c", reader)} ${adapterId === null ? Prisma.empty : Prisma.sql`AND c."adapterId" = ${adapterId}`}`;

type RawRow = Omit<SavedWeightsRow, "sizeBytes"> & { sizeBytes: bigint | null };
const fromRaw = (r: RawRow): SavedWeightsRow => ({
  ...r,
  sizeBytes: r.sizeBytes === null ? null : Number(r.sizeBytes),
});

/** The saved weights of one adapter of the team (all of the team's when `adapterId` is null), newest first. */
export async function listSavedWeights(
  db: DbTx,
  teamId: string,
  adapterId: string | null,
  page: { limit: number; offset: number },
): Promise<{ rows: SavedWeightsRow[]; total: number }> {
  const reader = { teamId };
  const [rows, count] = await Promise.all([
    db.$queryRaw<RawRow[]>`
      SELECT * FROM (${savedWeights(reader, adapterId)}) w
      ORDER BY "createdAt" DESC, kind, name LIMIT ${page.limit} OFFSET ${page.offset}`,
    db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM (${savedWeights(reader, adapterId)}) w`,
  ]);
  return { rows: rows.map(fromRaw), total: Number(count[0]?.n ?? 0) };
}

/** The newest saved weights of each kind of these adapters of the team. */
export async function latestSavedWeights(db: DbTx, teamId: string, adapterIds: readonly string[]) {
  if (adapterIds.length === 0) return [];
  const rows = await db.$queryRaw<RawRow[]>`
    SELECT DISTINCT ON ("adapterId", kind) * FROM (${savedWeights({ teamId }, null)}) w
    WHERE "adapterId" IN (${Prisma.join(adapterIds)})
    ORDER BY "adapterId", kind, "createdAt" DESC`;
  return rows.map(fromRaw);
}

export interface FoundCheckpoint {
  id: string;
  teamId: string;
  /** The owner's slug (state paths and handles name teams by it). */
  teamSlug: string;
  adapterId: string;
  name: string;
  path: string;
  checksum: string;
  publishedAt: Date | null;
  expiresAt: Date | null;
}

/** A training checkpoint by its run and name, as the reader may see it, or null. */
export async function findTrainingCheckpoint(
  db: DbTx,
  reader: Reader,
  adapterId: string,
  name: string,
): Promise<FoundCheckpoint | null> {
  const rows = await db.$queryRaw<FoundCheckpoint[]>`
    SELECT c.id, c."teamId", t.slug AS "teamSlug", c."adapterId", c.name, c.path, c.checksum,
      c."publishedAt", c."expiresAt"
    FROM "Checkpoint" c JOIN "Team" t ON t.id = c."teamId"
    WHERE c."adapterId" = ${adapterId} AND c.name = ${name} AND ${visible("c", reader)}`;
  return rows[0] ?? null;
}

export interface FoundSnapshot extends FoundCheckpoint {
  handle: string;
  version: number;
}

/** A sampler checkpoint by its run and Tinker name, as the reader may see it, or null. */
export async function findSamplerCheckpoint(
  db: DbTx,
  reader: Reader,
  adapterId: string,
  name: string,
): Promise<FoundSnapshot | null> {
  const version = VERSION_NAME.exec(name)?.[1];
  const rows = await db.$queryRaw<FoundSnapshot[]>`
    SELECT named.id, "teamId", t.slug AS "teamSlug", "adapterId", named.name, path, checksum,
      "publishedAt", "expiresAt", handle, version
    FROM (${namedSnapshots(reader, adapterId)}) named JOIN "Team" t ON t.id = named."teamId"
    WHERE named.name = ${name} ${version ? Prisma.sql`OR version = ${Number(version)}` : Prisma.empty}
    ORDER BY (named.name = ${name}) DESC LIMIT 1`;
  return rows[0] ?? null;
}

/** Sets or clears the expiry of this team's saved weights; false when there are none. */
export async function setSavedWeightsExpiry(
  db: DbTx,
  teamId: string,
  kind: CheckpointKind,
  id: string,
  expiresAt: Date | null,
): Promise<boolean> {
  const where = { id, teamId };
  const { count } =
    kind === "training"
      ? await db.checkpoint.updateMany({ where, data: { expiresAt } })
      : await db.snapshot.updateMany({ where, data: { expiresAt } });
  return count === 1;
}

/** Publishes (or unpublishes) this team's saved weights to every team; false when there are none. */
export async function setSavedWeightsPublished(
  db: DbTx,
  teamId: string,
  kind: CheckpointKind,
  id: string,
  published: boolean,
): Promise<boolean> {
  const where = { id, teamId };
  const data = { publishedAt: published ? new Date() : null };
  const { count } =
    kind === "training"
      ? await db.checkpoint.updateMany({
          where: { ...where, publishedAt: published ? null : { not: null } },
          data,
        })
      : await db.snapshot.updateMany({
          where: { ...where, publishedAt: published ? null : { not: null } },
          data,
        });
  if (count === 1) return true;
  // Already in that state: still this team's object.
  const exists =
    kind === "training" ? await db.checkpoint.count({ where }) : await db.snapshot.count({ where });
  return exists === 1;
}

/**
 * Deletes this team's saved weights and returns where their files are (the
 * caller deletes them after the commit), or null when there are none.
 */
export async function deleteSavedWeights(
  db: DbTx,
  teamId: string,
  kind: CheckpointKind,
  id: string,
): Promise<{ path: string } | null> {
  const rows =
    kind === "training"
      ? await db.$queryRaw<{ path: string }[]>`
          DELETE FROM "Checkpoint" WHERE id = ${id} AND "teamId" = ${teamId} RETURNING path`
      : await db.$queryRaw<{ path: string }[]>`
          DELETE FROM "Snapshot" WHERE id = ${id} AND "teamId" = ${teamId} RETURNING path`;
  return rows[0] ?? null;
}

/** Removes every team's expired saved weights; returns their file locations for the caller to delete. */
export async function dropExpiredSavedWeights(db: DbTx): Promise<string[]> {
  const rows = await db.$queryRaw<{ path: string }[]>`
    WITH c AS (DELETE FROM "Checkpoint" WHERE "expiresAt" <= now() RETURNING path),
         s AS (DELETE FROM "Snapshot" WHERE "expiresAt" <= now() RETURNING path)
    SELECT path FROM c UNION ALL SELECT path FROM s`;
  return rows.map((r) => r.path);
}

/** What a run's saved weights were trained as (base model, LoRA spec), if the reader may see them, or null. */
export async function savedWeightsSpec(
  db: DbTx,
  reader: Reader,
  kind: CheckpointKind,
  adapterId: string,
  name: string,
) {
  const found =
    kind === "training"
      ? await findTrainingCheckpoint(db, reader, adapterId, name)
      : await findSamplerCheckpoint(db, reader, adapterId, name);
  if (!found) return null;
  return db.adapter.findFirst({
    where: { id: found.adapterId, teamId: found.teamId },
    select: { ...policySpecSelect, baseModel: { select: { name: true } } },
  });
}
