// The steps every built-in model's build shares, in one order: kernel threads,
// tokenizer, initial weights, corpus, pretraining, the model directory and its
// checksums. The text and the VL builds supply only the parts that differ.
import {
  baseModelFrom,
  type FloatDtype,
  type ModelConfig,
  type ModelWeights,
  type Policy,
  setKernelThreads,
  type TextTokenizer,
  type WrittenFile,
} from "@opentinker/engine";
import type { TinyTokenizerFiles } from "@opentinker/engine/testing";
import type { RendererTokenizer } from "@opentinker/sdk";
import type { Example } from "../corpus/index.ts";
import { type Checksums, writeChecksums } from "./checksums.ts";
import { type PretrainOptions, type PretrainStep, pretrain } from "./pretrain.ts";
import { writeModelDir } from "./write.ts";

/** What every recipe holds (each is recorded whole in checksums.json). */
export interface ModelRecipe {
  name: string;
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

/** What one kind of model supplies to buildModel. */
export interface ModelParts<Files extends TinyTokenizerFiles> {
  tokenizer(): Promise<{ files: Files; tokenizer: TextTokenizer }>;
  config(files: Files): ModelConfig;
  initialWeights(config: ModelConfig): ModelWeights;
  corpus(tokenizer: RendererTokenizer, files: Files): Promise<Example[]>;
  /** What the corpus's length counts: "tokens", or "positions" where an image stands for many. */
  unit: string;
}

/** Builds a recipe into `dir`, logging progress; `onStep` is awaited after every pretraining step. */
export type ModelBuilder<Recipe extends ModelRecipe> = (
  recipe: Recipe,
  dir: string,
  log?: (line: string) => void,
  onStep?: (step: PretrainStep, policy: Policy) => void | Promise<void>,
) => Promise<BuildResult>;

/** The builder of one kind of model, from what that kind supplies for a recipe. */
export function modelBuilder<Recipe extends ModelRecipe, Files extends TinyTokenizerFiles>(
  partsOf: (recipe: Recipe) => ModelParts<Files>,
): ModelBuilder<Recipe> {
  return (recipe, dir, log = () => {}, onStep) => buildModel(recipe, partsOf(recipe), dir, log, onStep);
}

async function buildModel<Files extends TinyTokenizerFiles>(
  recipe: ModelRecipe,
  parts: ModelParts<Files>,
  dir: string,
  log: (line: string) => void,
  onStep?: (step: PretrainStep, policy: Policy) => void | Promise<void>,
): Promise<BuildResult> {
  const started = performance.now();
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(1);
  setKernelThreads(recipe.kernelThreads);
  const { files: tokenizerFiles, tokenizer } = await parts.tokenizer();
  log(`tokenizer: ${tokenizerFiles.size} tokens (${elapsed()} s)`);
  const config = parts.config(tokenizerFiles);
  const base = baseModelFrom(recipe.name, { config, weights: parts.initialWeights(config), tokenizer });
  const examples = await parts.corpus(tokenizer as RendererTokenizer, tokenizerFiles);
  const tokens = examples.reduce((sum, e) => sum + e.tokens.length, 0);
  log(`corpus: ${examples.length} examples, ${tokens} ${parts.unit} (${elapsed()} s)`);
  const policy = await pretrain(base, examples, recipe.pretrain, onStep);
  log(`pretrained ${recipe.pretrain.steps} steps (${elapsed()} s)`);
  const files = await writeModelDir(dir, config, policy, tokenizerFiles, recipe.dtype);
  const checksums = await writeChecksums(dir, recipe.name, files, recipe);
  return { files, checksums, seconds: (performance.now() - started) / 1000 };
}
