// Starting success of a vision-language model on the shapes validation split:
// the same environment, dataset and rollout as RL validation (SDK `evaluate`,
// temperature 1), with more episodes than an experiment's validation so the
// figure is steadier; also split by question (name the shape / count them).
import type { BaseModel, VisionConfig } from "@opentinker/engine";
import { ShapesEnv, shapesDataset } from "@opentinker/envs";
import { type EnvGroupBuilder, evaluate, type RendererTokenizer, type Trajectory } from "@opentinker/sdk";
import {
  type EvaluateOptions,
  type Sampler,
  scoreEpisodes,
  type TaskScore,
  withBaseSampler,
} from "./evaluate.ts";

export type ShapesQuestion = "name" | "count";

export interface ShapesScore extends TaskScore {
  byQuestion: Record<ShapesQuestion, TaskScore>;
}

const GROUP_SIZE = 8;

/** Single turn: the answer correct. */
const score = (trajectories: readonly Trajectory[]) =>
  scoreEpisodes(trajectories, (last) => last.metrics.correct ?? 0);

/** The question each group asks, read from the environments it builds. */
async function questionsOf(builders: EnvGroupBuilder[]): Promise<ShapesQuestion[]> {
  return Promise.all(
    builders.map(async (b) => {
      const [env] = await b.makeEnvs();
      if (!(env instanceof ShapesEnv))
        throw new Error("evaluateShapes: the dataset built another environment");
      return env.task.question;
    }),
  );
}

export interface ShapesEvaluateOptions extends EvaluateOptions {
  /** Sampling temperature (default 1, as RL validation samples); 0 shows the model's first choice. */
  temperature?: number;
}

/** Scores any sampler (a base model's, or a trained adapter's snapshot) on the validation split. */
export async function evaluateShapesWith(
  sampler: Sampler,
  tokenizer: RendererTokenizer,
  vision: VisionConfig,
  o: ShapesEvaluateOptions,
): Promise<ShapesScore> {
  const side = vision.imageSize / vision.patchSize;
  const dataset = shapesDataset({
    tokenizer,
    split: "validation",
    seed: o.seed,
    batches: 1,
    groupsPerBatch: Math.max(1, Math.round(o.episodes / GROUP_SIZE)),
    groupSize: GROUP_SIZE,
    size: vision.imageSize,
    imageTokens: side * side,
  });
  const { groups } = await evaluate(sampler, dataset, {
    seed: o.seed,
    ...(o.temperature === undefined ? {} : { sampling: { temperature: o.temperature } }),
  });
  const questions = await questionsOf(dataset.batch(0));
  const of = (q: ShapesQuestion) =>
    groups.filter((_, g) => questions[g] === q).flatMap((g) => g.trajectories);
  return {
    ...score(groups.flatMap((g) => g.trajectories)),
    byQuestion: { name: score(of("name")), count: score(of("count")) },
  };
}

export async function evaluateShapes(base: BaseModel, o: ShapesEvaluateOptions): Promise<ShapesScore> {
  if (!base.tokenizer) throw new Error(`${base.name} has no tokenizer`);
  const vision = base.config.vision;
  if (!vision) throw new Error(`${base.name} has no vision input: shapes prompts hold an image`);
  return withBaseSampler(base, (sampler) =>
    evaluateShapesWith(sampler, base.tokenizer as RendererTokenizer, vision, o),
  );
}
