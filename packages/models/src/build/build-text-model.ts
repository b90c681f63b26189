// Builds a text model from its recipe: tokenizer → random init → pretraining on
// the corpus → model directory + checksums.json. Deterministic for a recipe on a
// given kernel build: the thread count is pinned, every random draw is seeded.
import path from "node:path";
import {
  baseModelFrom,
  type FloatDtype,
  kernelInfo,
  type Policy,
  setKernelThreads,
  type WrittenFile,
  writeJsonFile,
} from "@opentinker/engine";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type TextCorpusSpec, textCorpus } from "../corpus/index.ts";
import { buildTokenizer, type TokenizerRecipe } from "../tokenizer/build.ts";
import { type BuildEnvironment, CHECKSUMS_FILE, type Checksums } from "./checksums.ts";
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

export function buildEnvironment(): BuildEnvironment {
  const info = kernelInfo();
  return { kernelThreads: info.threads, blas: info.blas, simd: info.simd, node: process.version };
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
  const checksums: Checksums = {
    model: recipe.name,
    files: Object.fromEntries(files.map((f) => [path.basename(f.path), f.sha256])),
    build: buildEnvironment(),
    recipe: JSON.parse(JSON.stringify(recipe)),
  };
  await writeJsonFile(path.join(dir, CHECKSUMS_FILE), checksums);
  return { files, checksums, seconds: (performance.now() - started) / 1000 };
}
