// Base models (shared by every team) and their tokenizer files.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { getBaseModel, listBaseModels } from "@opentinker/db";
import {
  type TokenizerFiles,
  ZBaseModel,
  ZBaseModelNameRequest,
  ZNoInput,
  ZTokenizerFiles,
} from "@opentinker/protocol";
import { z } from "zod";
import { found, router, teamRoute } from "../trpc.ts";

async function readOptional(file: string): Promise<string | null> {
  return readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
}

/** The tokenizer files of a base model's directory, as the workers load them. */
async function readTokenizerFiles(dir: string): Promise<TokenizerFiles> {
  const [json, config, chatTemplate] = await Promise.all([
    readFile(path.join(dir, "tokenizer.json"), "utf8"),
    readOptional(path.join(dir, "tokenizer_config.json")),
    readOptional(path.join(dir, "chat_template.jinja")),
  ]);
  return { tokenizerJson: JSON.parse(json), tokenizerConfig: JSON.parse(config ?? "{}"), chatTemplate };
}

export const modelsRouter = router({
  list: teamRoute("GET", "/v1/models", "models")
    .input(ZNoInput)
    .output(z.array(ZBaseModel))
    .query(({ ctx }) => listBaseModels(ctx.db)),

  /** The base model's tokenizer files, so remote clients tokenize exactly as the workers do. */
  tokenizer: teamRoute("GET", "/v1/models/{name}/tokenizer", "models")
    .input(ZBaseModelNameRequest)
    .output(ZTokenizerFiles)
    .query(async ({ ctx, input }) => {
      const base = found(await getBaseModel(ctx.db, input.name), "base model", input.name);
      return readTokenizerFiles(base.path);
    }),
});
