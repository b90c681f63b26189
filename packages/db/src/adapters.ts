import { adapterStateBytes } from "./adapter-size.ts";
import { modelLimitsSelect } from "./base-models.ts";
import type { Db, DbTx } from "./client.ts";
import { QuotaExceededError, UnknownTeamError } from "./errors.ts";
import type { AdapterKind } from "./generated/prisma/client.ts";
import { adapterSelect } from "./selects.ts";
import { BEST_TAG, bestSelect } from "./snapshot-tags.ts";
import { lockTeam } from "./team-lock.ts";

/** An adapter as the API shows it: its row and its best version, if one was marked. */
const adapterInfoSelect = {
  ...adapterSelect,
  tags: { where: { name: BEST_TAG }, select: bestSelect },
} as const;

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

/** What a team asks for: the base model by name. */
export interface NewAdapterInput extends Omit<CreateAdapterInput, "baseModelId"> {
  baseModel: string;
}

const trainableSizesSelect = {
  attnParamsPerRank: true,
  mlpParamsPerRank: true,
  unembedParamsPerRank: true,
  parameters: true,
} as const;

export async function createAdapter(db: DbTx, teamId: string, input: CreateAdapterInput) {
  if (input.kind === "LORA" && (input.rank === undefined || input.rank < 1)) {
    throw new RangeError(`createAdapter: a LORA adapter needs rank >= 1 (got ${input.rank})`);
  }
  const sizes = await db.baseModel.findUnique({
    where: { id: input.baseModelId },
    select: trainableSizesSelect,
  });
  const stateBytes = sizes ? adapterStateBytes(sizes, input) : null;
  return db.adapter.create({ data: { ...input, teamId, stateBytes }, select: adapterInfoSelect });
}

/**
 * Creates an adapter of the team within its maxAdapters quota. Concurrent
 * creations of one team are serialised, so the quota holds exactly; a FULL
 * adapter has no rank or alpha.
 */
export async function createAdapterWithinQuota(db: Db, teamId: string, input: NewAdapterInput) {
  const { baseModel, ...fields } = input;
  const base = await db.baseModel.findUnique({ where: { name: baseModel }, select: { id: true } });
  if (!base) throw new RangeError(`baseModel: unknown base model "${baseModel}"`);
  return db.$transaction(async (tx) => {
    await lockTeam(tx, "adapters", teamId);
    const team = await tx.team.findUnique({ where: { id: teamId }, select: { maxAdapters: true } });
    if (!team) throw new UnknownTeamError(`team ${teamId} no longer exists`);
    const count = await tx.adapter.count({ where: { teamId, status: "ACTIVE" } });
    if (count >= team.maxAdapters)
      throw new QuotaExceededError(
        `quota exceeded: the team has ${count} adapters (maxAdapters is ${team.maxAdapters})`,
      );
    return createAdapter(tx, teamId, {
      ...fields,
      baseModelId: base.id,
      ...(fields.kind === "FULL" ? { rank: undefined, alpha: undefined } : {}),
    });
  });
}

export function listAdapters(db: DbTx, teamId: string) {
  return db.adapter.findMany({
    where: { teamId },
    select: adapterInfoSelect,
    orderBy: { createdAt: "desc" },
  });
}

export function getAdapter(db: DbTx, teamId: string, adapterId: string) {
  return db.adapter.findFirst({ where: { id: adapterId, teamId }, select: adapterInfoSelect });
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
/** Saved weights whose TTL has not run out (the worker deletes expired ones later). */
export const unexpired = () => ({ OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }] });

/** Another team's checkpoint while its owner publishes it (read-only to every team), or null. */
export function findPublishedCheckpoint(db: DbTx, teamSlug: string, adapterId: string, name: string) {
  return db.checkpoint.findFirst({
    where: { team: { slug: teamSlug }, adapterId, name, publishedAt: { not: null }, ...unexpired() },
    select: { id: true, name: true, step: true, path: true, checksum: true },
  });
}

export function findCheckpoint(db: DbTx, teamId: string, adapterId: string, name: string) {
  return db.checkpoint.findFirst({
    where: { teamId, adapterId, name, ...unexpired() },
    select: { id: true, name: true, step: true, path: true, checksum: true },
  });
}

/**
 * Ends an adapter's training (its unload call ran): it takes no more training
 * calls and leaves its worker; what it saved stays. False when the team has no such adapter.
 */
export async function archiveAdapter(db: DbTx, teamId: string, adapterId: string): Promise<boolean> {
  const { count } = await db.adapter.updateMany({
    where: { id: adapterId, teamId },
    data: { status: "ARCHIVED", workerId: null },
  });
  return count === 1;
}
