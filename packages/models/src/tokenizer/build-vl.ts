// The built-in vision-language tokenizer: the text tokenizer's format (byte-level
// BPE, ChatML) plus the `<|image|>` placeholder, with merges trained on the text
// of the shapes corpus (rendered first with a merge-free tokenizer of the same
// format, so the texts are exactly what the environment produces).
import { createTextTokenizer } from "@opentinker/engine";
import {
  ENDOFTEXT,
  IM_END,
  IM_START,
  IMAGE_TOKEN,
  type TinyTokenizerFiles,
  tinyTokenizerFiles,
} from "@opentinker/engine/testing";
import type { RendererTokenizer } from "@opentinker/sdk";
import { exampleText, type ShapesCorpusOptions, shapesCorpus } from "../corpus/shapes.ts";
import type { BuiltTokenizer } from "./build.ts";
import { trainBpe } from "./train-bpe.ts";

export interface VlTokenizerRecipe {
  /** The corpus the merges are learned from (its text). */
  corpus: ShapesCorpusOptions;
  maxMerges: number;
  minFrequency: number;
  modelMaxLength: number;
}

/** The tokenizer files with `<|image|>`; `ids.image` is always set. */
export function vlTokenizerFiles(
  merges: Parameters<typeof tinyTokenizerFiles>[2],
  modelMaxLength: number,
): TinyTokenizerFiles & { ids: { image: number } } {
  const files = tinyTokenizerFiles(modelMaxLength, true, merges);
  const image = files.ids.image;
  if (image === undefined) throw new Error("vlTokenizerFiles: the tokenizer has no <|image|> token");
  return { ...files, ids: { ...files.ids, image } };
}

export async function buildVlTokenizer(
  recipe: VlTokenizerRecipe,
): Promise<BuiltTokenizer & { files: { ids: { image: number } } }> {
  const bytesFiles = vlTokenizerFiles([], recipe.modelMaxLength);
  const bytesOnly = createTextTokenizer(bytesFiles.tokenizerJson, bytesFiles.tokenizerConfig);
  const examples = await shapesCorpus(bytesOnly as RendererTokenizer, bytesFiles.ids.image, recipe.corpus);
  const merges = trainBpe(
    examples.map((e) => exampleText(bytesOnly as RendererTokenizer, e)),
    {
      maxMerges: recipe.maxMerges,
      minFrequency: recipe.minFrequency,
      specialTokens: [ENDOFTEXT, IM_START, IM_END, IMAGE_TOKEN],
    },
  );
  const files = vlTokenizerFiles(merges, recipe.modelMaxLength);
  return { files, tokenizer: createTextTokenizer(files.tokenizerJson, files.tokenizerConfig) };
}
