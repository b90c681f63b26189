// Starting success of a base model on each text task's validation split: the
// same environments, datasets and rollout as RL validation (SDK `evaluate`),
// with more episodes than an experiment's validation so the figure is steadier.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BaseModel, InProcessServiceClient } from "@opentinker/engine";
import { arithmeticDataset, guessNumberDataset, nimEvaluationDataset } from "@opentinker/envs";
import { evaluate, type RendererTokenizer, type RlDataset, type TrajectoryGroup } from "@opentinker/sdk";

export type TextTask = "arithmetic" | "guess-number" | "nim-vs-random";
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
  return nimEvaluationDataset({
    seed: o.seed,
    batches: 1,
    groupsPerBatch: groups,
    games: 8,
    opponent: "random",
  });
}

/** The last turn's metrics decide success; a failed episode counts as unsolved. */
function score(task: TextTask, groups: TrajectoryGroup[]): TaskScore {
  const all = groups.flatMap((g) => g.trajectories);
  let success = 0;
  let reward = 0;
  let malformed = 0;
  for (const t of all) {
    const last = t.transitions[t.transitions.length - 1];
    if (t.failure || !last) continue;
    const total = t.transitions.reduce((sum, tr) => sum + tr.reward, 0);
    reward += total;
    if (task === "arithmetic") success += last.metrics.correct ?? 0;
    else if (task === "guess-number") success += last.metrics.found ?? 0;
    else success += total > 0 ? 1 : 0;
    malformed += (last.metrics["format/malformed"] ?? 0) + (last.metrics["game/illegal_move"] ?? 0);
  }
  const n = Math.max(1, all.length);
  return { success: success / n, reward: reward / n, malformed: malformed / n, episodes: all.length };
}

export async function evaluateTextTasks(
  base: BaseModel,
  o: EvaluateOptions,
  tasks: readonly TextTask[] = TEXT_TASKS,
): Promise<Record<TextTask, TaskScore>> {
  if (!base.tokenizer) throw new Error(`${base.name} has no tokenizer`);
  const tokenizer = base.tokenizer as RendererTokenizer;
  const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-models-eval-"));
  try {
    const service = InProcessServiceClient.local([base], scratch, "models");
    const sampler = { client: await service.createSamplingClient({ baseModel: base.name }), version: 0 };
    const out: Partial<Record<TextTask, TaskScore>> = {};
    for (const task of tasks) {
      const { groups } = await evaluate(sampler, validationDataset(task, tokenizer, o), { seed: o.seed });
      out[task] = score(task, groups);
    }
    return out as Record<TextTask, TaskScore>;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
