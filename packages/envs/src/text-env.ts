// What the text environments share: a chat renderer for prompts and parsing,
// and the format penalty for an action that is not a well-formed answer.
import { appendTokens, type ModelInput } from "@opentinker/protocol";
import {
  ChatRenderer,
  type Env,
  type EnvGroupBuilder,
  type RendererTokenizer,
  type RlDataset,
  type StepResult,
  type StopCondition,
} from "@opentinker/sdk";
import { drawFromSplit, type Split, seededRandom } from "./split.ts";

export interface TextEnvOptions {
  /** Reward for a malformed action (no end of turn, or not a number). */
  formatPenalty?: number;
  maxTokens?: number;
}

export const DEFAULT_FORMAT_PENALTY = -0.1;
/** Tokens the model may write per turn, unless the config says otherwise. */
export const DEFAULT_MAX_TOKENS = 8;

export function rendererFor(tokenizer: RendererTokenizer, options: TextEnvOptions): ChatRenderer {
  return new ChatRenderer(tokenizer, { maxTokens: options.maxTokens ?? DEFAULT_MAX_TOKENS });
}

/** An integer answer, or null when the action is malformed. */
export function parseInteger(renderer: ChatRenderer, action: readonly number[]): number | null {
  const { text, complete } = renderer.parse(action);
  const trimmed = text.trim();
  if (!complete || !/^-?\d{1,9}$/.test(trimmed)) return null;
  return Number(trimmed);
}

/**
 * A multi-turn context extended by one exchange: the action exactly as
 * generated, then the environment's reply as a `role` turn (ChatML) and the
 * opening of the assistant's next turn. Every turn extends the context token
 * for token, so a whole episode trains as one sequence with the replies masked.
 */
export function appendReply(
  tokenizer: RendererTokenizer,
  context: ModelInput,
  action: readonly number[],
  role: "user" | "tool",
  content: string,
): ModelInput {
  const text = `\n<|im_start|>${role}\n${content}<|im_end|>\n<|im_start|>assistant\n`;
  return appendTokens(appendTokens(context, action), tokenizer.encode(text, { addSpecialTokens: false }));
}

export interface Prompted {
  observation: ModelInput;
  stop: StopCondition;
}

/** The end of an episode whose action was malformed: the format penalty. */
export function malformed(options: TextEnvOptions, metrics: Record<string, number> = {}): StepResult {
  return {
    reward: options.formatPenalty ?? DEFAULT_FORMAT_PENALTY,
    done: true,
    metrics: { "format/malformed": 1, ...metrics },
  };
}

/** The end of a single-turn episode with a well-formed answer: 1 if correct, else 0. */
export function scored(correct: boolean): StepResult {
  const value = correct ? 1 : 0;
  return { reward: value, done: true, metrics: { "format/malformed": 0, correct: value } };
}

/** Options every task dataset shares. */
export interface TaskDatasetOptions {
  tokenizer: RendererTokenizer;
  split: Split;
  seed: number;
  batches: number;
  groupsPerBatch: number;
  /** Attempts per task (GRPO group size). */
  groupSize: number;
}

export interface TaskSource<Task> {
  tag: string;
  draw: (random: () => number) => Task;
  /** A task's identity, which decides its split. */
  key: (task: Task) => string;
  /** The task's split, when the environment does not split by key hash. */
  split?: (task: Task) => Split;
  makeEnv: (task: Task) => Env;
}

/** Deterministic batches of groups, each group one task of the split tried `groupSize` times. */
export function taskDataset<Task>(o: TaskDatasetOptions, source: TaskSource<Task>): RlDataset {
  return {
    batches: o.batches,
    batch(index: number): EnvGroupBuilder[] {
      const random = seededRandom(o.seed * 1_000_003 + index);
      return Array.from({ length: o.groupsPerBatch }, () => {
        const task = drawFromSplit(random, o.split, source.draw, source.key, source.split);
        return {
          tag: source.tag,
          makeEnvs: async () => Array.from({ length: o.groupSize }, () => source.makeEnv(task)),
        };
      });
    },
  };
}
