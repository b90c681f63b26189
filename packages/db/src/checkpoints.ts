// What a worker's policy session records (C1): the adapter it opens, its saved
// training states and its trainer step. Every query is within the adapter's team.
import { parseJobCheckpointName } from "@opentinker/protocol";
import { unexpired } from "./adapters.ts";
import type { Db, DbTx } from "./client.ts";
import { adapterSelect } from "./selects.ts";

/** What a worker needs to open a team's adapter: its policy's spec and the team's slug. */
export function sessionAdapter(db: DbTx, teamId: string, adapterId: string) {
  return db.adapter.findFirst({
    where: { id: adapterId, teamId },
    select: { ...adapterSelect, team: { select: { slug: true } } },
  });
}

/**
 * The adapter's most recently saved checkpoint, or null: its state as last
 * saved, whatever its step (a weights-only load starts the step over).
 */
export function latestCheckpoint(db: DbTx, teamId: string, adapterId: string) {
  return db.checkpoint.findFirst({
    where: { teamId, adapterId, ...unexpired() },
    orderBy: [{ createdAt: "desc" }, { step: "desc" }],
    select: { path: true, checksum: true },
  });
}

export interface RecordCheckpointInput {
  adapterId: string;
  jobId?: string;
  name: string;
  step: number;
  path: string;
  checksum: string;
  sizeBytes: number;
  /** When it may be deleted (a TTL its owner set); absent: kept until deleted. */
  expiresAt?: Date | null;
}

/**
 * Records a checkpoint of this team's adapter. With `replace`, it takes the
 * name over from the adapter's checkpoint of that name in the same
 * transaction, and the replaced object's path is returned for the caller to
 * delete (else null).
 */
export async function recordCheckpoint(
  db: Db,
  teamId: string,
  input: RecordCheckpointInput,
  options: { replace?: boolean } = {},
): Promise<string | null> {
  const { jobId, sizeBytes, expiresAt, ...fields } = input;
  const data = {
    ...fields,
    teamId,
    jobId: jobId ?? null,
    sizeBytes: BigInt(sizeBytes),
    expiresAt: expiresAt ?? null,
  };
  if (!options.replace) {
    await db.checkpoint.create({ data, select: { id: true } });
    return null;
  }
  return db.$transaction(async (tx) => {
    const replaced = await tx.$queryRaw<{ path: string }[]>`
      DELETE FROM "Checkpoint"
      WHERE "teamId" = ${teamId} AND "adapterId" = ${input.adapterId} AND name = ${input.name}
      RETURNING path`;
    await tx.checkpoint.create({ data, select: { id: true } });
    return replaced[0]?.path ?? null;
  });
}

/** Writes down the adapter's trainer step (after an optimizer step or a restore). */
export async function setAdapterStep(
  db: DbTx,
  teamId: string,
  adapterId: string,
  step: number,
): Promise<void> {
  await db.adapter.updateMany({ where: { id: adapterId, teamId }, data: { step } });
}

/**
 * The step and name of the newest checkpoint a job saved of its own progress
 * (job checkpoint names carry the job's step, which the trainer's can lag: a
 * step with nothing to train on applies no optimizer step), or null.
 */
export async function latestJobCheckpoint(db: DbTx, teamId: string, jobId: string) {
  const rows = await db.checkpoint.findMany({ where: { teamId, jobId }, select: { name: true } });
  let latest: { name: string; step: number } | null = null;
  for (const { name } of rows) {
    const parsed = parseJobCheckpointName(name);
    if (parsed?.jobId === jobId && (!latest || parsed.step > latest.step))
      latest = { name, step: parsed.step };
  }
  return latest;
}
