// The built-in text tokenizer: merges trained on the chat part of the corpus
// (rendered first with a merge-free tokenizer of the same format, so the texts
// are exactly what the environments produce), written as Qwen2 tokenizer files.
import { createTextTokenizer, type TextTokenizer } from "@opentinker/engine";
import {
  byteLevelBpeFiles,
  ENDOFTEXT,
  IM_END,
  IM_START,
  type TinyTokenizerFiles,
} from "@opentinker/engine/testing";
import type { RendererTokenizer } from "@opentinker/sdk";
import { chatExamples, type TextCorpusSpec } from "../corpus/index.ts";
import { trainBpe } from "./train-bpe.ts";

export interface TokenizerRecipe {
  /** The corpus the merges are learned from (its chat part). */
  corpus: TextCorpusSpec;
  maxMerges: number;
  minFrequency: number;
  modelMaxLength: number;
}

export interface BuiltTokenizer {
  files: TinyTokenizerFiles;
  tokenizer: TextTokenizer;
}

const fromFiles = (files: TinyTokenizerFiles): TextTokenizer =>
  createTextTokenizer(files.tokenizerJson, files.tokenizerConfig);

export async function buildTokenizer(recipe: TokenizerRecipe): Promise<BuiltTokenizer> {
  const bytesOnly = fromFiles(byteLevelBpeFiles([], recipe.modelMaxLength));
  const examples = await chatExamples(bytesOnly as RendererTokenizer, recipe.corpus);
  const texts = examples.map((e) => bytesOnly.decode(e.tokens));
  const merges = trainBpe(texts, {
    maxMerges: recipe.maxMerges,
    minFrequency: recipe.minFrequency,
    specialTokens: [ENDOFTEXT, IM_START, IM_END],
  });
  const files = byteLevelBpeFiles(merges, recipe.modelMaxLength);
  return { files, tokenizer: fromFiles(files) };
}
