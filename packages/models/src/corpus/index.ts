// A text model's corpus: arithmetic, guess-the-number, calculator and nim
// examples from the environments' own generators (training split only), in one
// seeded order. A recipe names the parts it wants.
import { seededRandom } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type ArithmeticCorpusOptions, arithmeticCorpus } from "./arithmetic.ts";
import { type CalculatorCorpusOptions, calculatorCorpus } from "./calculator.ts";
import type { Example } from "./episodes.ts";
import { type GuessCorpusOptions, guessNumberCorpus } from "./guess-number.ts";
import { type NimCorpusOptions, nimCorpus } from "./nim.ts";

export type { Example } from "./episodes.ts";

export interface TextCorpusSpec {
  seed: number;
  arithmetic?: ArithmeticCorpusOptions;
  guessNumber?: GuessCorpusOptions;
  calculator?: CalculatorCorpusOptions;
  nim?: NimCorpusOptions;
}

/** Fisher–Yates with a seeded generator. */
export function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

// One stream per part, so changing one part's size leaves the others as they were.
const stream = (seed: number, part: number) => seededRandom(seed * 1_000_003 + part * 7919);

/** The chat parts (what the tokenizer's merges are trained on). */
export async function chatExamples(tokenizer: RendererTokenizer, spec: TextCorpusSpec): Promise<Example[]> {
  const { arithmetic, guessNumber, calculator } = spec;
  return [
    ...(arithmetic ? await arithmeticCorpus(tokenizer, stream(spec.seed, 1), arithmetic) : []),
    ...(guessNumber ? await guessNumberCorpus(tokenizer, stream(spec.seed, 2), guessNumber) : []),
    ...(calculator ? await calculatorCorpus(tokenizer, stream(spec.seed, 5), calculator) : []),
  ];
}

/** Every example of the corpus, shuffled. Nim positions are raw bytes, as the game renders them. */
export async function textCorpus(tokenizer: RendererTokenizer, spec: TextCorpusSpec): Promise<Example[]> {
  const nim = spec.nim ? nimCorpus(stream(spec.seed, 3), spec.nim) : [];
  const all = [...(await chatExamples(tokenizer, spec)), ...nim];
  return shuffle(all, stream(spec.seed, 4));
}
