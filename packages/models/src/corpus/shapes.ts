// The shapes corpus: training-split tasks, prompted by ShapesEnv exactly as
// during RL (the PNG image chunk, then the ChatML question), answered by a
// deliberately unreliable student: right with probability `pCorrect`, otherwise
// a near miss: the next shape in a fixed cycle (circle → square → triangle →
// circle), or one object too many. The near misses depend on the picture, so the
// pretrained model must still see the shape and the number of objects to imitate
// the student; it then puts its mass near the right answer without being sure of
// it, which is where RL has room to sharpen it (with the vision part frozen).
import {
  SHAPE_KINDS,
  type ShapeKind,
  ShapesEnv,
  type ShapesOptions,
  type ShapesTask,
  seededRandom,
  shapesDataset,
} from "@opentinker/envs";
import { appendTokens, IMAGE_POSITION_TOKEN, modelInputPositionTokens } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type Example, replyEncoder } from "./episodes.ts";

export interface ShapesCorpusOptions {
  /** Seeds the tasks (the environment's training dataset) and the student's answers. */
  seed: number;
  episodes: number;
  /** How often the student's answer is right. */
  pCorrect: number;
  /** Image side in pixels and soft tokens per image, as the environment is built with. */
  env: Required<Pick<ShapesOptions, "size" | "imageTokens">>;
}

/** The student's answer: the truth, or a near miss of it (always well-formed). */
export function studentShapesAnswer(task: ShapesTask, pCorrect: number, random: () => number): string {
  if (random() < pCorrect) return task.answer;
  if (task.question === "name") {
    const at = SHAPE_KINDS.indexOf(task.answer as ShapeKind);
    if (at < 0) throw new RangeError(`studentShapesAnswer: "${task.answer}" is not a shape`);
    return SHAPE_KINDS[(at + 1) % SHAPE_KINDS.length] as ShapeKind;
  }
  // A consistent overcount, like the names' cycle: a mistake that is a fixed
  // function of the truth keeps the truth readable inside the model, so a LoRA
  // policy can learn to say it. (Miscounting by one either way left the counts
  // blurred: RL then raised naming but not counting.)
  return String(Number(task.answer) + 1);
}

/**
 * One example per episode: the environment's observation with the answer and its
 * end of turn appended. Image positions hold `imageTokenId` (any id would do:
 * the engine replaces their embeddings) and weight 0; only the answer has weight.
 * Each answer is checked with the environment's own parser, so the corpus never
 * teaches a malformed reply.
 */
export async function shapesCorpus(
  tokenizer: RendererTokenizer,
  imageTokenId: number,
  o: ShapesCorpusOptions,
): Promise<Example[]> {
  const reply = replyEncoder(tokenizer);
  const student = seededRandom(o.seed * 1_000_003 + 1);
  // The environment's own training dataset: its generator, its split, its rendering.
  const groups = shapesDataset({
    ...o.env,
    tokenizer,
    split: "train",
    seed: o.seed,
    batches: 1,
    groupsPerBatch: o.episodes,
    groupSize: 1,
  }).batch(0);
  const out: Example[] = [];
  for (const group of groups) {
    const [env] = await group.makeEnvs();
    if (!(env instanceof ShapesEnv))
      throw new Error("shapesCorpus: the shapes dataset built another environment");
    const answer = studentShapesAnswer(env.task, o.pCorrect, student);
    const { observation } = await env.initialObservation();
    const action = reply(answer);
    const result = await env.step(action);
    if (result.metrics?.["format/malformed"] !== 0)
      throw new Error(`shapesCorpus: the environment finds the answer "${answer}" malformed`);
    const input = appendTokens(observation, action);
    const tokens = modelInputPositionTokens(input).map((t) =>
      t === IMAGE_POSITION_TOKEN ? imageTokenId : t,
    );
    const promptLength = tokens.length - action.length;
    out.push({ input, tokens, weights: tokens.map((_, at) => (at < promptLength ? 0 : 1)) });
  }
  return out;
}

/** The text of an example (image positions left out): what the tokenizer's merges learn from. */
export function exampleText(tokenizer: RendererTokenizer, e: Example): string {
  const chunks = e.input?.chunks ?? [{ type: "encoded_text" as const, tokens: e.tokens }];
  return chunks.map((c) => (c.type === "encoded_text" ? tokenizer.decode(c.tokens) : "")).join("");
}
