import { modelLimitsSelect } from "./base-models.ts";
import type { DbTx } from "./client.ts";
import type { AdapterKind } from "./generated/prisma/client.ts";
import { adapterSelect } from "./selects.ts";

export interface CreateAdapterInput {
  name: string;
  baseModelId: string;
  kind: AdapterKind;
  rank?: number;
  alpha?: number;
  trainAttn?: boolean;
  trainMlp?: boolean;
  trainUnembed?: boolean;
  seed?: number;
}

export function createAdapter(db: DbTx, teamId: string, input: CreateAdapterInput) {
  if (input.kind === "LORA" && (input.rank === undefined || input.rank < 1)) {
    throw new RangeError(`createAdapter: a LORA adapter needs rank >= 1 (got ${input.rank})`);
  }
  return db.adapter.create({ data: { ...input, teamId }, select: adapterSelect });
}

export function listAdapters(db: DbTx, teamId: string) {
  return db.adapter.findMany({ where: { teamId }, select: adapterSelect, orderBy: { createdAt: "desc" } });
}

export function getAdapter(db: DbTx, teamId: string, adapterId: string) {
  return db.adapter.findFirst({ where: { id: adapterId, teamId }, select: adapterSelect });
}

/** Deletes an adapter of this team with its history; false when there is none. */
export async function deleteAdapter(db: DbTx, teamId: string, adapterId: string): Promise<boolean> {
  const { count } = await db.adapter.deleteMany({ where: { id: adapterId, teamId } });
  return count === 1;
}

/** The base model an adapter of this team trains over (its limits), or null. */
export async function adapterBaseModel(db: DbTx, teamId: string, adapterId: string) {
  const row = await db.adapter.findFirst({
    where: { id: adapterId, teamId },
    select: { baseModel: { select: modelLimitsSelect } },
  });
  return row?.baseModel ?? null;
}

/** A checkpoint of this team's adapter by name, or null. */
export function findCheckpoint(db: DbTx, teamId: string, adapterId: string, name: string) {
  return db.checkpoint.findFirst({
    where: { teamId, adapterId, name },
    select: { id: true, name: true, step: true, path: true, checksum: true },
  });
}
