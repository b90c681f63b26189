// node --import tsx packages/models/src/experiments/wider-text-model.ts <out dir> [hidden]
// A diagnostic for docs/results.md ("What falls short"): the built-in text
// model's recipe (corpus, tokenizer, initialisation, schedule, depth) at a
// larger width, to see whether a bigger model keeps malformed answers on
// held-out inputs from rising under RL. Run a setting on it with
// `--model <out dir>`.
import type { TextModelRecipe } from "../build/build-text-model.ts";
import { TEXT_TINY } from "../recipes.ts";
import { buildDiagnosticModel } from "./diagnostic-model.ts";

const HEAD_SIZE = TEXT_TINY.shape.hiddenSize / TEXT_TINY.shape.numHeads;
/** The width of one key/value head's group of query heads: widths must be whole groups. */
const GROUP = HEAD_SIZE * (TEXT_TINY.shape.numHeads / TEXT_TINY.shape.numKvHeads);

/** Heads keep the recipe's head size; the MLP keeps its ratio to the width. */
function widened(hidden: number): TextModelRecipe {
  const { shape } = TEXT_TINY;
  const numHeads = hidden / HEAD_SIZE;
  return {
    ...TEXT_TINY,
    name: `${TEXT_TINY.name}-h${hidden}`,
    shape: {
      ...shape,
      hiddenSize: hidden,
      intermediateSize: (shape.intermediateSize / shape.hiddenSize) * hidden,
      numHeads,
      numKvHeads: numHeads * (shape.numKvHeads / shape.numHeads),
    },
  };
}

const [out, hiddenArg = "256"] = process.argv.slice(2);
const hidden = Number(hiddenArg);
if (!out || !Number.isInteger(hidden) || hidden <= 0 || hidden % GROUP !== 0)
  throw new RangeError(`usage: wider-text-model.ts <out dir> [hidden, a multiple of ${GROUP}]`);
await buildDiagnosticModel(widened(hidden), out);
