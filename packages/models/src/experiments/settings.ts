// The named experiment settings: which environment, which policy, which loop.
import {
  arithmeticDataset,
  guessNumberDataset,
  nimEvaluationDataset,
  nimSelfPlayDataset,
  type Split,
  seededRandom,
  shapesDataset,
  type TaskDatasetOptions,
} from "@opentinker/envs";
import type { RendererTokenizer, RlDataset } from "@opentinker/sdk";
import { arithmeticCorpus } from "../corpus/arithmetic.ts";
import type { Example } from "../corpus/index.ts";
import { TEXT_TINY } from "../recipes.ts";
import { DEFAULT_VL_MODEL } from "../registry.ts";

export interface SettingContext {
  tokenizer: RendererTokenizer;
  seed: number;
  steps: number;
}

/** Supervised fine-tuning before RL: examples of the task done right. */
export interface SftPhase {
  examples(ctx: SettingContext): Promise<Example[]>;
  steps: number;
  batchSize: number;
  learningRate: number;
}

export interface Setting {
  name: string;
  description: string;
  train(ctx: SettingContext): RlDataset;
  validation(ctx: SettingContext): RlDataset;
  lossFn: "ppo" | "importance_sampling";
  learningRate: number;
  /** LoRA rank 16 over the frozen base (default), or every weight trained. */
  policy?: "lora" | "full";
  sft?: SftPhase;
  /**
   * The validation metric the summary reports, without its `val/` prefix
   * (default `reward/mean`; nim reports games won).
   */
  metric?: string;
  /** Further evaluations, run at the start and the end only (nim: against the optimal player). */
  evaluations?: Record<string, (ctx: SettingContext) => RlDataset>;
  /** The built-in model it runs on unless told otherwise (default: the text model). */
  model?: string;
}

/** Two settings trained at once over one base, each its own adapter (C5). */
export interface PairSetting {
  name: string;
  description: string;
  pair: readonly [string, string];
}

type SplitDataset = (ctx: SettingContext, split: Split, batches: number) => RlDataset;
type Groups = Pick<TaskDatasetOptions, "groupsPerBatch" | "groupSize">;

/** An environment's dataset for either split, each with its own groups. */
const bySplit =
  (make: (o: TaskDatasetOptions) => RlDataset, train: Groups, validation: Groups): SplitDataset =>
  (ctx, split, batches) =>
    make({
      tokenizer: ctx.tokenizer,
      split,
      seed: ctx.seed,
      batches,
      ...(split === "train" ? train : validation),
    });

// Validation: 128 held-out problems once each, so ±20 points is well past the noise.
const arith = bySplit(
  arithmeticDataset,
  { groupsPerBatch: 16, groupSize: 8 },
  { groupsPerBatch: 128, groupSize: 1 },
);
// Validation: 128 games in the held-out range.
const guess = bySplit(
  guessNumberDataset,
  { groupsPerBatch: 8, groupSize: 8 },
  { groupsPerBatch: 64, groupSize: 2 },
);
// Validation: 128 episodes over 64 pictures, a steadier figure than 32 (validation is cheap here).
const shapes = bySplit(
  shapesDataset,
  { groupsPerBatch: 4, groupSize: 8 },
  { groupsPerBatch: 64, groupSize: 2 },
);

/** LoRA r=16 GRPO (ppo): `ctx.steps` batches of the training split, validated on one batch of the held-out split. */
const loraRl = (name: string, description: string, dataset: SplitDataset): Setting => ({
  name,
  description,
  train: (ctx) => dataset(ctx, "train", ctx.steps),
  validation: (ctx) => dataset(ctx, "validation", 1),
  lossFn: "ppo",
  learningRate: 1e-3,
});

const nimAgainst = (ctx: SettingContext, opponent: "random" | "optimal") =>
  nimEvaluationDataset({ seed: ctx.seed + 1, batches: 1, groupsPerBatch: 16, games: 8, opponent });

/** Correct answers to training-split problems, rendered by the environment itself. */
const arithmeticSft: SftPhase = {
  examples: (ctx) =>
    arithmeticCorpus(ctx.tokenizer, seededRandom(ctx.seed * 7919 + 17), {
      ...TEXT_TINY.corpus.arithmetic,
      episodes: 60 * 32,
      pCorrect: 1,
    }),
  steps: 60,
  batchSize: 32,
  learningRate: 5e-4,
};

const arithmeticLoraRl = loraRl("arithmetic-lora-rl", "single-turn text, LoRA r=16, GRPO (ppo)", arith);

export const SETTINGS: Record<string, Setting> = {
  "arithmetic-lora-rl": arithmeticLoraRl,
  "arithmetic-full-sft-rl": {
    ...arithmeticLoraRl,
    name: "arithmetic-full-sft-rl",
    description: "single-turn text, full-parameter: 60 SFT steps on right answers, then GRPO (ppo)",
    learningRate: 5e-5,
    policy: "full",
    sft: arithmeticSft,
  },
  "guess-number-lora-rl": {
    ...loraRl("guess-number-lora-rl", "multi-turn text, LoRA r=16, GRPO (ppo)", guess),
    // Success (the secret found within the turns), like every other setting's
    // figure; the mean reward, which also pays for speed, is in the summary too.
    metric: "env/found",
  },
  "nim-selfplay-lora-rl": {
    name: "nim-selfplay-lora-rl",
    description: "two-agent self-play, LoRA r=16; validation: games won against the random player",
    train: (ctx) => nimSelfPlayDataset({ seed: ctx.seed, batches: ctx.steps, groupsPerBatch: 8, games: 4 }),
    validation: (ctx) => nimAgainst(ctx, "random"),
    lossFn: "ppo",
    learningRate: 1e-3,
    metric: "env/game/won",
    evaluations: { "vs-optimal": (ctx) => nimAgainst(ctx, "optimal") },
  },
  "shapes-lora-rl": {
    ...loraRl("shapes-lora-rl", "single-turn image + text, LoRA r=16 (vision frozen), GRPO (ppo)", shapes),
    model: DEFAULT_VL_MODEL,
  },
};

export const PAIR_SETTINGS: Record<string, PairSetting> = {
  "two-adapters-lora-rl": {
    name: "two-adapters-lora-rl",
    description:
      "arithmetic and guess-number LoRA RL at once over one base and one sampler; arithmetic is then retrained alone and compared byte for byte",
    pair: ["arithmetic-lora-rl", "guess-number-lora-rl"],
  },
};
