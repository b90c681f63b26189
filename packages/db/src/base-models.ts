import type { DbTx } from "./client.ts";

export interface BaseModelInput {
  name: string;
  path: string;
  architecture: string;
  vocabSize: number;
  contextLength: number;
  visionLanguage?: boolean;
  checksum?: string;
}

/** Base models are shared by every team; registering one again updates it. */
export function registerBaseModel(db: DbTx, input: BaseModelInput) {
  return db.baseModel.upsert({ where: { name: input.name }, create: input, update: input });
}

export function listBaseModels(db: DbTx) {
  return db.baseModel.findMany({ orderBy: { name: "asc" } });
}
