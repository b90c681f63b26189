// The recipes of the built-in text models: shape, corpus, tokenizer and
// pretraining settings. Changing any value changes the model's checksums.
import { ARITHMETIC_MAX_OPERAND } from "@opentinker/envs";
import type { TextModelRecipe } from "./build/build-text-model.ts";
import type { TextCorpusSpec } from "./corpus/index.ts";

/**
 * What every built-in model's pretraining shares after its own schedule (steps,
 * batch, peak rate, warmup): the decay, regularisation and data order.
 */
export const BUILT_IN_PRETRAIN = { finalLrRatio: 0.1, weightDecay: 0, gradClipNorm: 1, seed: 11 } as const;

/** How every built-in model is built: two kernel threads (float sums depend on the split), stored as F32. */
export const BUILT_IN_BUILD = { kernelThreads: 2, dtype: "F32" } as const;

const CORPUS: TextCorpusSpec = {
  seed: 1,
  arithmetic: { episodes: 45_000, pCorrect: 0.5, mistake: "near-miss", maxOperand: ARITHMETIC_MAX_OPERAND },
  guessNumber: { episodes: 9_000, maxTurns: 6, pCareless: 0.5, maxStep: 3 },
  nim: { games: 2_250 },
};

export const TEXT_TINY: TextModelRecipe = {
  name: "opentinker-text-tiny",
  shape: {
    hiddenSize: 128,
    intermediateSize: 384,
    numLayers: 4,
    numHeads: 4,
    numKvHeads: 2,
    maxPositionEmbeddings: 512,
  },
  initSeed: 7,
  tokenizer: {
    // Merges come from a slice of the same corpus: the phrases are few and fixed.
    corpus: {
      ...CORPUS,
      arithmetic: { ...CORPUS.arithmetic, episodes: 2_000 },
      guessNumber: { ...CORPUS.guessNumber, episodes: 500 },
    },
    maxMerges: 400,
    minFrequency: 20,
    modelMaxLength: 512,
  },
  corpus: CORPUS,
  pretrain: {
    // About one pass over the corpus (64.5k examples).
    steps: 2_000,
    batchSize: 32,
    learningRate: 1.5e-3,
    warmupSteps: 100,
    ...BUILT_IN_PRETRAIN,
  },
  ...BUILT_IN_BUILD,
};

export const TEXT_RECIPES: Readonly<Record<string, TextModelRecipe>> = { text: TEXT_TINY };
