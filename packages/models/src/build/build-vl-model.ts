import { type ModelConfig, type ModelWeights, Rng, type VisionConfig, visionDims } from "@opentinker/engine";
import type { TinyTokenizerFiles } from "@opentinker/engine/testing";
import { type ShapesCorpusOptions, shapesCorpus } from "../corpus/shapes.ts";
import { buildVlTokenizer, type VlTokenizerRecipe } from "../tokenizer/build-vl.ts";
import { type ModelParts, type ModelRecipe, modelBuilder } from "./build-model.ts";
import { initialWeights, type ModelShape, textModelConfig } from "./init.ts";

/** The VL tokenizer's files: the text ones plus the image placeholder's id. */
type VlTokenizerFiles = TinyTokenizerFiles & { ids: { image: number } };

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

export interface VlModelRecipe extends ModelRecipe {
  shape: ModelShape;
  vision: VisionShape;
  initSeed: number;
  tokenizer: VlTokenizerRecipe;
  corpus: ShapesCorpusOptions;
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

export const buildVlModel = modelBuilder(
  (recipe: VlModelRecipe): ModelParts<VlTokenizerFiles> => ({
    tokenizer: () => buildVlTokenizer(recipe.tokenizer),
    config: (files) => vlModelConfig(recipe, { size: files.size, ...files.ids }),
    initialWeights: (config) => initialVlWeights(config, recipe.initSeed, recipe.vision.projInitStd),
    corpus: (tokenizer, files) => shapesCorpus(tokenizer, files.ids.image, recipe.corpus),
    unit: "positions",
  }),
);
