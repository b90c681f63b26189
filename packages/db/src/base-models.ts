import { adapterStateBytes } from "./adapter-size.ts";
import type { DbTx } from "./client.ts";

export interface BaseModelInput {
  name: string;
  path: string;
  architecture: string;
  vocabSize: number;
  contextLength: number;
  visionLanguage?: boolean;
  /** Positions one image takes (vision-language models). */
  imageTokens?: number | null;
  /** Trainable sizes (engine's trainableSizes): placement charges an adapter by them. */
  attnParamsPerRank?: number | null;
  mlpParamsPerRank?: number | null;
  unembedParamsPerRank?: number | null;
  parameters?: number | null;
  checksum?: string;
}

/** What a call's inputs are checked against (protocol's ModelLimits), plus the row's id. */
export const modelLimitsSelect = {
  id: true,
  name: true,
  vocabSize: true,
  contextLength: true,
  imageTokens: true,
} as const;

/**
 * Base models are shared by every team; registering one again updates it, and
 * charges its adapters made before their size was known (placement by memory).
 */
export async function registerBaseModel(db: DbTx, input: BaseModelInput) {
  const base = await db.baseModel.upsert({ where: { name: input.name }, create: input, update: input });
  const unsized = await db.adapter.findMany({
    where: { baseModelId: base.id, stateBytes: null },
    select: { id: true, kind: true, rank: true, trainAttn: true, trainMlp: true, trainUnembed: true },
  });
  for (const { id, rank, ...adapter } of unsized) {
    const stateBytes = adapterStateBytes(base, { ...adapter, rank: rank ?? undefined });
    if (stateBytes !== null) await db.adapter.update({ where: { id }, data: { stateBytes } });
  }
  return base;
}

/** What the API shows of a base model (not where its files are). */
export const baseModelSelect = {
  id: true,
  name: true,
  architecture: true,
  vocabSize: true,
  contextLength: true,
  visionLanguage: true,
  imageTokens: true,
} as const;

export function listBaseModels(db: DbTx) {
  return db.baseModel.findMany({ orderBy: { name: "asc" }, select: baseModelSelect });
}

/** A base model by name (with where its files are), or null. */
export function getBaseModel(db: DbTx, name: string) {
  return db.baseModel.findUnique({ where: { name } });
}

export function getBaseModelLimits(db: DbTx, name: string) {
  return db.baseModel.findUnique({ where: { name }, select: modelLimitsSelect });
}
