import {
  baseModelFrom,
  type FloatDtype,
  type ModelConfig,
  type ModelWeights,
  type Policy,
  Rng,
  setKernelThreads,
  type VisionConfig,
  visionDims,
} from "@opentinker/engine";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type ShapesCorpusOptions, shapesCorpus } from "../corpus/shapes.ts";
import { buildVlTokenizer, type VlTokenizerRecipe } from "../tokenizer/build-vl.ts";
import type { BuildResult } from "./build-text-model.ts";
import { writeChecksums } from "./checksums.ts";
import { initialWeights, type ModelShape, textModelConfig } from "./init.ts";
import { type PretrainOptions, type PretrainStep, pretrain } from "./pretrain.ts";
import { writeModelDir } from "./write.ts";

export interface VisionShape {
  /** S: images are S×S pixels (the environment's picture size). */
  imageSize: number;
  /** P: patch side; an image becomes (S/P)² soft tokens. */
  patchSize: number;
  /**
   * Standard deviation of the patch projection's initial weights. Pixels are
   * mostly one background colour, so the picture's variation is small; at the
   * text part's 0.02 the model learns the answers' prior and never starts
   * looking (measured: a plateau at the image-blind loss for 1000+ steps),
   * while ~0.3 makes the shapes stand out and it learns to see in a few hundred.
   */
  projInitStd: number;
}

export interface VlModelRecipe {
  name: string;
  shape: ModelShape;
  vision: VisionShape;
  initSeed: number;
  tokenizer: VlTokenizerRecipe;
  corpus: ShapesCorpusOptions;
  pretrain: PretrainOptions;
  /** Kernel threads during the build: float sums depend on how work is split. */
  kernelThreads: number;
  dtype: FloatDtype;
}

/** The text config plus the vision part, checked against the environment's image settings. */
export function vlModelConfig(
  recipe: VlModelRecipe,
  ids: { size: number; endOfText: number; imEnd: number; image: number },
): ModelConfig {
  const vision: VisionConfig = {
    imageSize: recipe.vision.imageSize,
    patchSize: recipe.vision.patchSize,
    numChannels: 3,
    imageTokenId: ids.image,
  };
  const { numPatches } = visionDims(vision);
  const env = recipe.corpus.env;
  if (env.size !== recipe.vision.imageSize || env.imageTokens !== numPatches)
    throw new RangeError(
      `${recipe.name}: the corpus renders ${env.size}×${env.size} images as ${env.imageTokens} tokens, ` +
        `but the model takes ${recipe.vision.imageSize}×${recipe.vision.imageSize} images as ${numPatches}`,
    );
  return {
    ...textModelConfig(recipe.shape, { vocabSize: ids.size, endOfText: ids.endOfText, imEnd: ids.imEnd }),
    vision,
  };
}

/** The text part as the text model starts; the patch projection redrawn at its own scale. */
export function initialVlWeights(config: ModelConfig, seed: number, projInitStd: number): ModelWeights {
  const weights = initialWeights(config, seed);
  if (!weights.vision) throw new Error("initialVlWeights: the config has no vision part");
  const rng = new Rng(seed + 1);
  const proj = weights.vision.patchProj; // [hidden, C·P·P]
  for (let i = 0; i < proj.length; i++) proj[i] = projInitStd * rng.normal();
  return weights;
}

export async function buildVlModel(
  recipe: VlModelRecipe,
  dir: string,
  log: (line: string) => void = () => {},
  onStep?: (step: PretrainStep, policy: Policy) => void | Promise<void>,
): Promise<BuildResult> {
  const started = performance.now();
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(1);
  setKernelThreads(recipe.kernelThreads);
  const { files: tokenizerFiles, tokenizer } = await buildVlTokenizer(recipe.tokenizer);
  log(`tokenizer: ${tokenizerFiles.size} tokens (${elapsed()} s)`);
  const config = vlModelConfig(recipe, { size: tokenizerFiles.size, ...tokenizerFiles.ids });
  const base = baseModelFrom(recipe.name, {
    config,
    weights: initialVlWeights(config, recipe.initSeed, recipe.vision.projInitStd),
    tokenizer,
  });
  const examples = await shapesCorpus(
    tokenizer as RendererTokenizer,
    tokenizerFiles.ids.image,
    recipe.corpus,
  );
  const tokens = examples.reduce((sum, e) => sum + e.tokens.length, 0);
  log(`corpus: ${examples.length} examples, ${tokens} positions (${elapsed()} s)`);
  const policy = await pretrain(base, examples, recipe.pretrain, onStep);
  log(`pretrained ${recipe.pretrain.steps} steps (${elapsed()} s)`);
  const files = await writeModelDir(dir, config, policy, tokenizerFiles, recipe.dtype);
  const checksums = await writeChecksums(dir, recipe.name, files, recipe);
  return { files, checksums, seconds: (performance.now() - started) / 1000 };
}
