import type { TinyTokenizerFiles } from "@opentinker/engine/testing";
import { type TextCorpusSpec, textCorpus } from "../corpus/index.ts";
import { buildTokenizer, type TokenizerRecipe } from "../tokenizer/build.ts";
import { type ModelParts, type ModelRecipe, modelBuilder } from "./build-model.ts";
import { initialWeights, type ModelShape, textModelConfig } from "./init.ts";

export type { BuildResult } from "./build-model.ts";

export interface TextModelRecipe extends ModelRecipe {
  shape: ModelShape;
  initSeed: number;
  tokenizer: TokenizerRecipe;
  corpus: TextCorpusSpec;
}

export const buildTextModel = modelBuilder(
  (recipe: TextModelRecipe): ModelParts<TinyTokenizerFiles> => ({
    tokenizer: () => buildTokenizer(recipe.tokenizer),
    config: (files) =>
      textModelConfig(recipe.shape, {
        vocabSize: files.size,
        endOfText: files.ids.endOfText,
        imEnd: files.ids.imEnd,
      }),
    initialWeights: (config) => initialWeights(config, recipe.initSeed),
    corpus: (tokenizer) => textCorpus(tokenizer, recipe.corpus),
    unit: "tokens",
  }),
);
