// Starting success of a base model on each text task's validation split: the
// same environments, datasets and rollout as RL validation (SDK `evaluate`),
// with more episodes than an experiment's validation so the figure is steadier.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BaseModel, InProcessServiceClient } from "@opentinker/engine";
import {
  arithmeticDataset,
  calculatorDataset,
  guessNumberDataset,
  nimEvaluationDataset,
} from "@opentinker/envs";
import {
  evaluate,
  type RendererTokenizer,
  type RlDataset,
  type Trajectory,
  type Transition,
} from "@opentinker/sdk";

export const ALL_TEXT_TASKS = ["arithmetic", "guess-number", "nim-vs-random", "calculator"] as const;
export type TextTask = (typeof ALL_TEXT_TASKS)[number];
/** What the built-in text model is scored on (the calculator is the tool model's task). */
export const TEXT_TASKS: readonly TextTask[] = ["arithmetic", "guess-number", "nim-vs-random"];

export interface TaskScore {
  /** Fraction of episodes solved: correct answer / secret found / game won. */
  success: number;
  /** Mean episode reward (what an experiment reports as val/reward/mean). */
  reward: number;
  /** Fraction of episodes that ended on a malformed or illegal action. */
  malformed: number;
  episodes: number;
}

export interface EvaluateOptions {
  seed: number;
  /** Episodes per task, roughly (rounded to whole groups). */
  episodes: number;
}

function validationDataset(task: TextTask, tokenizer: RendererTokenizer, o: EvaluateOptions): RlDataset {
  const groups = Math.max(1, Math.round(o.episodes / 8));
  const text = { tokenizer, split: "validation" as const, seed: o.seed, batches: 1, groupsPerBatch: groups };
  if (task === "arithmetic") return arithmeticDataset({ ...text, groupSize: 8 });
  if (task === "guess-number") return guessNumberDataset({ ...text, groupSize: 8 });
  if (task === "calculator") return calculatorDataset({ ...text, groupSize: 8 });
  return nimEvaluationDataset({
    seed: o.seed,
    batches: 1,
    groupsPerBatch: groups,
    games: 8,
    opponent: "random",
  });
}

/** Whether a finished episode succeeded (0 or 1), from its last turn and its total reward. */
export type EpisodeSuccess = (last: Transition, total: number) => number;

/**
 * Means over episodes: success as `success` says, reward, and malformed or
 * illegal last actions. A failed episode counts as unsolved.
 */
export function scoreEpisodes(trajectories: readonly Trajectory[], success: EpisodeSuccess): TaskScore {
  let solved = 0;
  let reward = 0;
  let malformed = 0;
  for (const t of trajectories) {
    const last = t.transitions[t.transitions.length - 1];
    if (t.failure || !last) continue;
    const total = t.transitions.reduce((sum, tr) => sum + tr.reward, 0);
    reward += total;
    solved += success(last, total);
    malformed += (last.metrics["format/malformed"] ?? 0) + (last.metrics["game/illegal_move"] ?? 0);
  }
  const n = Math.max(1, trajectories.length);
  return { success: solved / n, reward: reward / n, malformed: malformed / n, episodes: trajectories.length };
}

/** Success per task: the answer correct, the secret found, the game won. */
const SUCCESS: Readonly<Record<TextTask, EpisodeSuccess>> = {
  arithmetic: (last) => last.metrics.correct ?? 0,
  "guess-number": (last) => last.metrics.found ?? 0,
  "nim-vs-random": (_, total) => (total > 0 ? 1 : 0),
  calculator: (last) => last.metrics.correct ?? 0,
};

/** What SDK `evaluate` samples with: a base model's sampler, or a trained adapter's snapshot. */
export type Sampler = Parameters<typeof evaluate>[0];

/** Runs `use` with a sampler of the base model (in process, over a scratch store removed after). */
export async function withBaseSampler<T>(base: BaseModel, use: (sampler: Sampler) => Promise<T>): Promise<T> {
  const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-models-eval-"));
  try {
    const service = InProcessServiceClient.local([base], scratch, "models");
    return await use({ client: await service.createSamplingClient({ baseModel: base.name }), version: 0 });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

export async function evaluateTextTasks(
  base: BaseModel,
  o: EvaluateOptions,
  tasks: readonly TextTask[] = TEXT_TASKS,
): Promise<Record<TextTask, TaskScore>> {
  if (!base.tokenizer) throw new Error(`${base.name} has no tokenizer`);
  const tokenizer = base.tokenizer as RendererTokenizer;
  return withBaseSampler(base, async (sampler) => {
    const out: Partial<Record<TextTask, TaskScore>> = {};
    for (const task of tasks) {
      const { groups } = await evaluate(sampler, validationDataset(task, tokenizer, o), { seed: o.seed });
      out[task] = scoreEpisodes(
        groups.flatMap((g) => g.trajectories),
        SUCCESS[task],
      );
    }
    return out as Record<TextTask, TaskScore>;
  });
}
