// What a worker's policy session records (C1): the adapter it opens, its saved
// training states and its trainer step. Every query is within the adapter's team.
import { parseJobCheckpointName } from "@opentinker/protocol";
import type { DbTx } from "./client.ts";
import { adapterSelect } from "./selects.ts";

/** What a worker needs to open a team's adapter: its policy's spec and the team's slug. */
export function sessionAdapter(db: DbTx, teamId: string, adapterId: string) {
  return db.adapter.findFirst({
    where: { id: adapterId, teamId },
    select: { ...adapterSelect, team: { select: { slug: true } } },
  });
}

/** The adapter's newest checkpoint (highest step, then newest), or null. */
export function latestCheckpoint(db: DbTx, teamId: string, adapterId: string) {
  return db.checkpoint.findFirst({
    where: { teamId, adapterId },
    orderBy: [{ step: "desc" }, { createdAt: "desc" }],
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
}

export async function recordCheckpoint(
  db: DbTx,
  teamId: string,
  input: RecordCheckpointInput,
): Promise<void> {
  const { jobId, sizeBytes, ...fields } = input;
  await db.checkpoint.create({
    data: { ...fields, teamId, jobId: jobId ?? null, sizeBytes: BigInt(sizeBytes) },
    select: { id: true },
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
