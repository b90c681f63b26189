// node --import tsx packages/models/src/experiments/single-task-model.ts <arithmetic|guess-number> <out dir> [steps]
// A diagnostic for docs/results.md ("What falls short"): the built-in text
// model's recipe (shape, tokenizer, initialisation, schedule) pretrained on one
// task's part of its corpus alone, by default for about as many passes over it
// as the built-in model makes over the whole (6,000 steps over 64.5k examples).
// Run a setting on it with `--model <out dir>`: if stray words in answers came
// from the other task's vocabulary, a model that never saw that task should not
// learn to emit them.
import type { TextModelRecipe } from "../build/build-text-model.ts";
import type { TextCorpusSpec } from "../corpus/index.ts";
import { TEXT_TINY } from "../recipes.ts";
import { buildDiagnosticModel } from "./diagnostic-model.ts";

/** Each part, and the steps that make about three passes over it at the recipe's batch. */
const PARTS = {
  arithmetic: { corpus: (c: TextCorpusSpec) => ({ seed: c.seed, arithmetic: c.arithmetic }), steps: 4_200 },
  "guess-number": {
    corpus: (c: TextCorpusSpec) => ({ seed: c.seed, guessNumber: c.guessNumber }),
    steps: 850,
  },
} as const;

const [task, out, stepsArg] = process.argv.slice(2);
const part = task ? PARTS[task as keyof typeof PARTS] : undefined;
const steps = stepsArg === undefined ? part?.steps : Number(stepsArg);
if (!part || !out || !(Number.isInteger(steps) && (steps as number) > 0))
  throw new RangeError(`usage: single-task-model.ts <${Object.keys(PARTS).join("|")}> <out dir> [steps > 0]`);
const recipe: TextModelRecipe = {
  ...TEXT_TINY,
  name: `${TEXT_TINY.name}-${task}-only`,
  corpus: part.corpus(TEXT_TINY.corpus),
  pretrain: { ...TEXT_TINY.pretrain, steps: steps as number },
};
await buildDiagnosticModel(recipe, out);
