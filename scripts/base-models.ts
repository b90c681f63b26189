// The base models `npm start` registers: a small random model it writes itself
// (deterministic, in the real Hugging Face layout; enough to try the API), the
// built-in pretrained models committed in packages/models, plus any local model
// directories named in OPENTINKER_MODELS ("name=/path/to/hf-dir,other=/path").
import { existsSync } from "node:fs";
import path from "node:path";
import type { BaseModelInput } from "@opentinker/db";
import { describeBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { BUILT_IN_MODELS } from "@opentinker/models";

export const STARTER_MODEL = "tiny-random";

export function parseModelList(value: string | undefined): { name: string; dir: string }[] {
  return (value ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const eq = entry.indexOf("=");
      if (eq <= 0) throw new Error(`OPENTINKER_MODELS: "${entry}" is not name=/path/to/model`);
      return { name: entry.slice(0, eq), dir: path.resolve(entry.slice(eq + 1)) };
    });
}

/**
 * Writes the starter model under the data directory unless it is there. It is
 * deterministic, so every host that writes it at the same path (a worker host
 * joining from another machine) holds the very files the database describes.
 */
export async function ensureStarterModel(dataDir: string): Promise<string> {
  const starter = path.join(dataDir, "models", STARTER_MODEL);
  if (!existsSync(path.join(starter, "config.json")))
    await writeTinyModel(starter, { ...TINY_MODEL, seed: 2 });
  return starter;
}

export async function baseModels(dataDir: string, list: string | undefined): Promise<BaseModelInput[]> {
  const models = [await describeBaseModel(STARTER_MODEL, await ensureStarterModel(dataDir))];
  // Committed with the code: a missing one is a broken checkout, and says so.
  for (const { name, dir } of BUILT_IN_MODELS) models.push(await describeBaseModel(name, dir));
  for (const { name, dir } of parseModelList(list)) models.push(await describeBaseModel(name, dir));
  return models;
}
