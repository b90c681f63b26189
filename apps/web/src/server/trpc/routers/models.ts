import { readFile } from "node:fs/promises";
import path from "node:path";
import { listBaseModels } from "@opentinker/db";
import { z } from "zod";
import { notFound, router, teamProcedure } from "../init.ts";

async function readOptional(file: string): Promise<string | null> {
  return readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
}

const ZBaseModel = z.object({
  id: z.string(),
  name: z.string(),
  architecture: z.string(),
  vocabSize: z.number(),
  contextLength: z.number(),
  visionLanguage: z.boolean(),
  /** Positions one image takes (vision-language models), else null. */
  imageTokens: z.number().nullable(),
});

export const modelsRouter = router({
  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/models", protect: true, tags: ["models"] } })
    .input(z.object({}))
    .output(z.array(ZBaseModel))
    .query(async ({ ctx }) =>
      (await listBaseModels(ctx.db)).map(
        ({ id, name, architecture, vocabSize, contextLength, visionLanguage, imageTokens }) => ({
          id,
          name,
          architecture,
          vocabSize,
          contextLength,
          visionLanguage,
          imageTokens,
        }),
      ),
    ),

  /** The base model's tokenizer files, so remote clients tokenize exactly as the workers do. */
  tokenizer: teamProcedure
    .meta({
      openapi: { method: "GET", path: "/v1/models/{name}/tokenizer", protect: true, tags: ["models"] },
    })
    .input(z.object({ name: z.string().min(1) }))
    .output(
      z.object({
        tokenizerJson: z.unknown(),
        tokenizerConfig: z.unknown(),
        chatTemplate: z.string().nullable(),
      }),
    )
    .query(async ({ ctx, input }) => {
      const base = await ctx.db.baseModel.findUnique({ where: { name: input.name } });
      if (!base) notFound("base model", input.name);
      const [json, config, chatTemplate] = await Promise.all([
        readFile(path.join(base.path, "tokenizer.json"), "utf8"),
        readOptional(path.join(base.path, "tokenizer_config.json")),
        readOptional(path.join(base.path, "chat_template.jinja")),
      ]);
      return { tokenizerJson: JSON.parse(json), tokenizerConfig: JSON.parse(config ?? "{}"), chatTemplate };
    }),
});
