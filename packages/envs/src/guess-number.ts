// `guess-number`: multi-turn, text. The model guesses a secret in [1, max]; the
// environment answers "higher" or "lower"; finding it in fewer turns earns more
// (1 on the first guess, down to 1/maxTurns on the last). The next observation
// is the previous context, the model's exact action tokens and the feedback, so
// every turn extends the context and a whole episode trains as one sequence.
import type { ModelInput } from "@opentinker/protocol";
import type { ChatRenderer, Env, RendererTokenizer, RlDataset, StepResult } from "@opentinker/sdk";
import type { Split } from "./split.ts";
import {
  appendReply,
  malformed,
  parseInteger,
  rendererFor,
  type TaskDatasetOptions,
  type TextEnvOptions,
  taskDataset,
} from "./text-env.ts";

export interface GuessTask {
  secret: number;
  max: number;
}

/** A task's identity, which decides its split. */
export const guessKey = (t: GuessTask) => `${t.secret}/${t.max}`;

/** The ranges a task is drawn from (1 to each). */
export const GUESS_RANGES: readonly number[] = [8, 12, 16, 20, 24];

/**
 * Validation is a whole range that training never sees. Holding out secrets
 * instead (first 16 alone of 1–16, then one (secret, range) pair in five) let RL
 * learn a prior over the training secrets: training success rose while held-out
 * success stayed flat or fell. A prior over other ranges does not help in an
 * unseen one; searching with the feedback does.
 */
export const GUESS_VALIDATION_RANGE = 16;

/** Guesses before an episode ends, unless the config says otherwise. */
export const GUESS_MAX_TURNS = 6;

/**
 * The reward of a malformed guess, unless the config says otherwise: as bad as
 * a lost game and more (−0.1, the other text environments' default, left RL
 * malformed guesses on held-out ranges to rise: development seeds 4 and 5,
 * 1 → 5 and 2 → 13 of 1,024 at −0.1, 1 → 1 and 2 → 6 at −1, with equal or
 * larger gains; docs/results.md).
 */
export const GUESS_FORMAT_PENALTY = -1;

export const guessSplit = (t: GuessTask): Split =>
  t.max === GUESS_VALIDATION_RANGE ? "validation" : "train";

/** A task in 1..`max`, or in a range drawn from GUESS_RANGES. */
export function guessTask(random: () => number, max?: number): GuessTask {
  const range = max ?? (GUESS_RANGES[Math.floor(random() * GUESS_RANGES.length)] as number);
  return { secret: 1 + Math.floor(random() * range), max: range };
}

export interface GuessOptions extends TextEnvOptions {
  maxTurns?: number;
}

export class GuessNumberEnv implements Env {
  private readonly renderer: ChatRenderer;
  private context: ModelInput | null = null;
  private turns = 0;

  constructor(
    readonly task: GuessTask,
    private readonly tokenizer: RendererTokenizer,
    private readonly options: GuessOptions = {},
  ) {
    this.renderer = rendererFor(tokenizer, options);
  }

  get maxTurns(): number {
    return this.options.maxTurns ?? GUESS_MAX_TURNS;
  }

  async initialObservation() {
    const content = `I picked a number from 1 to ${this.task.max}. Guess it; reply with the number only.`;
    this.context = this.renderer.prompt([{ role: "user", content }]);
    return { observation: this.context, stop: this.renderer.stop() };
  }

  async step(action: number[]): Promise<StepResult> {
    this.turns++;
    const guess = parseInteger(this.renderer, action);
    if (guess === null)
      return malformed({ formatPenalty: this.options.formatPenalty ?? GUESS_FORMAT_PENALTY }, { found: 0 });
    if (guess === this.task.secret) {
      return {
        reward: (this.maxTurns - this.turns + 1) / this.maxTurns,
        done: true,
        metrics: { "format/malformed": 0, found: 1, turns: this.turns },
      };
    }
    if (this.turns >= this.maxTurns)
      return { reward: 0, done: true, metrics: { "format/malformed": 0, found: 0, turns: this.turns } };
    return {
      reward: 0,
      done: false,
      nextObservation: this.feedback(action, guess < this.task.secret ? "higher" : "lower"),
    };
  }

  /** The context, then the action exactly as generated, then the user's feedback turn. */
  private feedback(action: number[], word: string): ModelInput {
    this.context = appendReply(this.tokenizer, this.context as ModelInput, action, "user", word);
    return this.context;
  }
}

export interface GuessDatasetOptions extends GuessOptions, TaskDatasetOptions {
  /** One range 1..max (default: the GUESS_RANGES). */
  max?: number;
}

export function guessNumberDataset(o: GuessDatasetOptions): RlDataset {
  return taskDataset(o, {
    tag: "guess-number",
    draw: (r) => guessTask(r, o.max),
    key: guessKey,
    split: guessSplit,
    makeEnv: (task) => new GuessNumberEnv(task, o.tokenizer, o),
  });
}
