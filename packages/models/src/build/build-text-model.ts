import {
  baseModelFrom,
  type FloatDtype,
  type Policy,
  setKernelThreads,
  type WrittenFile,
} from "@opentinker/engine";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type TextCorpusSpec, textCorpus } from "../corpus/index.ts";
import { buildTokenizer, type TokenizerRecipe } from "../tokenizer/build.ts";
import { type Checksums, writeChecksums } from "./checksums.ts";
import { initialWeights, type ModelShape, textModelConfig } from "./init.ts";
import { type PretrainOptions, type PretrainStep, pretrain } from "./pretrain.ts";
import { writeModelDir } from "./write.ts";

export interface TextModelRecipe {
  name: string;
  shape: ModelShape;
  initSeed: number;
  tokenizer: TokenizerRecipe;
  corpus: TextCorpusSpec;
  pretrain: PretrainOptions;
  /** Kernel threads during the build: float sums depend on how work is split. */
  kernelThreads: number;
  dtype: FloatDtype;
}

export interface BuildResult {
  files: WrittenFile[];
  checksums: Checksums;
  seconds: number;
}

export async function buildTextModel(
  recipe: TextModelRecipe,
  dir: string,
  log: (line: string) => void = () => {},
  onStep?: (step: PretrainStep, policy: Policy) => void | Promise<void>,
): Promise<BuildResult> {
  const started = performance.now();
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(1);
  setKernelThreads(recipe.kernelThreads);
  const { files: tokenizerFiles, tokenizer } = await buildTokenizer(recipe.tokenizer);
  log(`tokenizer: ${tokenizerFiles.size} tokens (${elapsed()} s)`);
  const config = textModelConfig(recipe.shape, {
    vocabSize: tokenizerFiles.size,
    endOfText: tokenizerFiles.ids.endOfText,
    imEnd: tokenizerFiles.ids.imEnd,
  });
  const base = baseModelFrom(recipe.name, {
    config,
    weights: initialWeights(config, recipe.initSeed),
    tokenizer,
  });
  const examples = await textCorpus(tokenizer as RendererTokenizer, recipe.corpus);
  const tokens = examples.reduce((sum, e) => sum + e.tokens.length, 0);
  log(`corpus: ${examples.length} examples, ${tokens} tokens (${elapsed()} s)`);
  const policy = await pretrain(base, examples, recipe.pretrain, onStep);
  log(`pretrained ${recipe.pretrain.steps} steps (${elapsed()} s)`);
  const files = await writeModelDir(dir, config, policy, tokenizerFiles, recipe.dtype);
  const checksums = await writeChecksums(dir, recipe.name, files, recipe);
  return { files, checksums, seconds: (performance.now() - started) / 1000 };
}
