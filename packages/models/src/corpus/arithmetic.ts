// The arithmetic corpus: training-split tasks, prompted by ArithmeticEnv, answered
// by a deliberately unreliable student: right with probability `pCorrect`, else
// it makes the recipe's kind of mistake (off by one or two, another operator's
// result, or one of the operands copied). The pretrained model then starts
// partly right. README.md records how each kind started and how short RL runs
// moved it; the built-in model uses "near-miss".
import {
  ARITHMETIC_OPS,
  ArithmeticEnv,
  type ArithmeticTask,
  applyOp,
  arithmeticKey,
  arithmeticTask,
  drawFromSplit,
} from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type Example, scriptedEpisodes } from "./episodes.ts";

export type ArithmeticMistake = "near-miss" | "other-operator" | "copy-operand";

export interface ArithmeticCorpusOptions {
  episodes: number;
  pCorrect: number;
  mistake: ArithmeticMistake;
  maxOperand: number;
  /** Only these training-split tasks (default: all of them). */
  only?: (task: ArithmeticTask) => boolean;
}

const NEAR_MISSES = [-2, -1, 1, 2] as const;

const pick = <T>(items: readonly T[], random: () => number): T =>
  items[Math.floor(random() * items.length)] as T;

/** The student's answer: the truth, or the kind of mistake `mistake` names. */
export function studentAnswer(
  task: ArithmeticTask,
  pCorrect: number,
  mistake: ArithmeticMistake,
  random: () => number,
): number {
  if (random() < pCorrect) return task.answer;
  if (mistake === "near-miss") return task.answer + pick(NEAR_MISSES, random);
  if (mistake === "copy-operand") return pick([task.a, task.b], random);
  const other = pick(
    ARITHMETIC_OPS.filter((op) => op !== task.op),
    random,
  );
  return applyOp(other, task.a, task.b);
}

export function arithmeticCorpus(
  tokenizer: RendererTokenizer,
  random: () => number,
  o: ArithmeticCorpusOptions,
): Promise<Example[]> {
  return scriptedEpisodes(tokenizer, o.episodes, (reply) => {
    const draw = () => drawFromSplit(random, "train", (r) => arithmeticTask(r, o.maxOperand), arithmeticKey);
    let task = draw();
    while (o.only && !o.only(task)) task = draw();
    const answer = studentAnswer(task, o.pCorrect, o.mistake, random);
    return { env: new ArithmeticEnv(task, tokenizer), player: () => reply(String(answer)) };
  });
}
