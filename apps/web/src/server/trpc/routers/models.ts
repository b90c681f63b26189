import { listBaseModels } from "@opentinker/db";
import { z } from "zod";
import { router, teamProcedure } from "../init.ts";

const ZBaseModel = z.object({
  id: z.string(),
  name: z.string(),
  architecture: z.string(),
  vocabSize: z.number(),
  contextLength: z.number(),
  visionLanguage: z.boolean(),
});

export const modelsRouter = router({
  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/models", protect: true, tags: ["models"] } })
    .input(z.object({}))
    .output(z.array(ZBaseModel))
    .query(async ({ ctx }) =>
      (await listBaseModels(ctx.db)).map(
        ({ id, name, architecture, vocabSize, contextLength, visionLanguage }) => ({
          id,
          name,
          architecture,
          vocabSize,
          contextLength,
          visionLanguage,
        }),
      ),
    ),
});
