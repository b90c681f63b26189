// The recipe of the built-in vision-language model: shape, vision part, corpus,
// tokenizer and pretraining settings. Changing any value changes its checksums.
import type { VlModelRecipe } from "./build/build-vl-model.ts";
import type { ShapesCorpusOptions } from "./corpus/shapes.ts";
import { BUILT_IN_BUILD, BUILT_IN_PRETRAIN } from "./recipes.ts";
import { DEFAULT_VL_MODEL } from "./registry.ts";

// The shapes environment's defaults: 32×32 pictures, 16 image tokens (8×8 patches).
const ENV = { size: 32, imageTokens: 16 };

const CORPUS: ShapesCorpusOptions = { seed: 1, episodes: 20_000, pCorrect: 0.3, env: ENV };

export const SHAPES_VL_TINY: VlModelRecipe = {
  name: DEFAULT_VL_MODEL,
  shape: {
    hiddenSize: 128,
    intermediateSize: 384,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    maxPositionEmbeddings: 128,
  },
  vision: { imageSize: 32, patchSize: 8, projInitStd: 0.3 },
  initSeed: 7,
  tokenizer: {
    // Two questions and a handful of answers: a small slice finds every merge.
    corpus: { ...CORPUS, episodes: 1_000 },
    maxMerges: 200,
    minFrequency: 20,
    modelMaxLength: 128,
  },
  corpus: CORPUS,
  pretrain: {
    steps: 1_000,
    batchSize: 32,
    learningRate: 3e-3,
    warmupSteps: 50,
    ...BUILT_IN_PRETRAIN,
  },
  ...BUILT_IN_BUILD,
};

export const VL_RECIPES: Readonly<Record<string, VlModelRecipe>> = { shapes: SHAPES_VL_TINY };
