// The guess-the-number corpus: dialogues with GuessNumberEnv (training ranges
// only: the environment's split) played by a reasonable but careless guesser: a uniform first
// guess; afterwards, with probability `pCareless` a fresh uniform guess that
// ignores the feedback, otherwise a step of 1–`maxStep` in the direction the
// feedback says (clamped to the range). It finds the secret in about half the
// games; halving the interval would always find it, so RL has room to improve.
import {
  drawFromSplit,
  GUESS_VALIDATION_RANGE,
  GuessNumberEnv,
  type GuessTask,
  guessKey,
  guessSplit,
  guessTask,
} from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type Example, scriptedEpisodes } from "./episodes.ts";

export interface GuessCorpusOptions {
  episodes: number;
  /** One training range 1..max (default: the environment's training ranges). */
  max?: number;
  maxTurns: number;
  pCareless: number;
  maxStep: number;
}

/** A guesser that remembers its last guess and what the environment answered. */
export function carelessGuesser(task: GuessTask, o: GuessCorpusOptions, random: () => number) {
  const uniform = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  let last: number | null = null;
  return (): number => {
    let guess: number;
    if (last === null || random() < o.pCareless) guess = uniform(1, task.max);
    else {
      const step = uniform(1, o.maxStep);
      guess = Math.min(task.max, Math.max(1, last < task.secret ? last + step : last - step));
    }
    last = guess;
    return guess;
  };
}

export function guessNumberCorpus(
  tokenizer: RendererTokenizer,
  random: () => number,
  o: GuessCorpusOptions,
): Promise<Example[]> {
  if (o.max === GUESS_VALIDATION_RANGE)
    throw new RangeError(
      `guess-number corpus: the range 1–${o.max} is the validation split; choose a training range`,
    );
  return scriptedEpisodes(tokenizer, o.episodes, (reply) => {
    // The environment's split: the validation range 1–16 never appears here.
    const task = drawFromSplit(random, "train", (r) => guessTask(r, o.max), guessKey, guessSplit);
    const guess = carelessGuesser(task, o, random);
    const env = new GuessNumberEnv(task, tokenizer, { maxTurns: o.maxTurns });
    return { env, player: () => reply(String(guess())) };
  });
}
