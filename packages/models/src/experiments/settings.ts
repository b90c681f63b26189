// The named experiment settings: which environment, which policy, which loop.
import {
  arithmeticDataset,
  guessNumberDataset,
  nimEvaluationDataset,
  nimSelfPlayDataset,
  shapesDataset,
} from "@opentinker/envs";
import type { RendererTokenizer, RlDataset } from "@opentinker/sdk";
import { DEFAULT_VL_MODEL } from "../registry.ts";

export interface SettingContext {
  tokenizer: RendererTokenizer;
  seed: number;
  steps: number;
}

export interface Setting {
  name: string;
  description: string;
  train(ctx: SettingContext): RlDataset;
  validation(ctx: SettingContext): RlDataset;
  lossFn: "ppo" | "importance_sampling";
  learningRate: number;
  /** The built-in model it runs on unless told otherwise (default: the text model). */
  model?: string;
}

const arith = (ctx: SettingContext, split: "train" | "validation", batches: number) =>
  arithmeticDataset({
    tokenizer: ctx.tokenizer,
    split,
    seed: ctx.seed,
    batches,
    groupsPerBatch: 4,
    groupSize: 8,
  });

export const SETTINGS: Record<string, Setting> = {
  "arithmetic-lora-rl": {
    name: "arithmetic-lora-rl",
    description: "single-turn text, LoRA r=16, GRPO (ppo)",
    train: (ctx) => arith(ctx, "train", ctx.steps),
    validation: (ctx) => arith(ctx, "validation", 1),
    lossFn: "ppo",
    learningRate: 1e-3,
  },
  "guess-number-lora-rl": {
    name: "guess-number-lora-rl",
    description: "multi-turn text, LoRA r=16, GRPO (ppo)",
    train: (ctx) =>
      guessNumberDataset({
        tokenizer: ctx.tokenizer,
        split: "train",
        seed: ctx.seed,
        batches: ctx.steps,
        groupsPerBatch: 4,
        groupSize: 8,
      }),
    validation: (ctx) =>
      guessNumberDataset({
        tokenizer: ctx.tokenizer,
        split: "validation",
        seed: ctx.seed,
        batches: 1,
        groupsPerBatch: 4,
        groupSize: 4,
      }),
    lossFn: "ppo",
    learningRate: 1e-3,
  },
  "nim-selfplay-lora-rl": {
    name: "nim-selfplay-lora-rl",
    description: "two-agent self-play, LoRA r=16; validation against the random player",
    train: (ctx) => nimSelfPlayDataset({ seed: ctx.seed, batches: ctx.steps, groupsPerBatch: 2, games: 4 }),
    validation: (ctx) =>
      nimEvaluationDataset({
        seed: ctx.seed + 1,
        batches: 1,
        groupsPerBatch: 2,
        games: 8,
        opponent: "random",
      }),
    lossFn: "ppo",
    learningRate: 1e-3,
  },
  "shapes-lora-rl": {
    name: "shapes-lora-rl",
    description: "single-turn image + text, LoRA r=16 (vision frozen), GRPO (ppo)",
    train: (ctx) =>
      shapesDataset({
        tokenizer: ctx.tokenizer,
        split: "train",
        seed: ctx.seed,
        batches: ctx.steps,
        groupsPerBatch: 4,
        groupSize: 8,
      }),
    // 128 episodes over 64 pictures: a steadier figure than 32 (validation is cheap here).
    validation: (ctx) =>
      shapesDataset({
        tokenizer: ctx.tokenizer,
        split: "validation",
        seed: ctx.seed,
        batches: 1,
        groupsPerBatch: 64,
        groupSize: 2,
      }),
    lossFn: "ppo",
    learningRate: 1e-3,
    model: DEFAULT_VL_MODEL,
  },
};
