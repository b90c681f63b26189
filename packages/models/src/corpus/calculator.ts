// The calculator corpus: CalculatorEnv episodes (training split only) played by
// a student who knows the single-digit facts but not when to use its tool. It
// calls the calculator on some problems of either size (paying for calls it
// does not need on small ones, guessing near the answer on large ones it does
// not call for), sometimes miscopies an operand into the call or the tool's
// result into its answer, and now and then calls twice. The pretrained model
// then knows the call format and how to read a result; when to call, and
// copying exactly, are left to RL.
import {
  applyOp,
  CalculatorEnv,
  type CalculatorTask,
  calculatorKey,
  calculatorSplit,
  calculatorTask,
  drawFromSplit,
} from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type Example, scriptedEpisodes } from "./episodes.ts";

export interface CalculatorCorpusOptions {
  episodes: number;
  /** How often the student calls the tool, by problem size. */
  pCall: { small: number; large: number };
  /** Right answers to small problems without the tool. */
  pSmallRight: number;
  /** An exact copy of the operands into a call, and of the tool's result into the answer. */
  pCopyCall: number;
  pCopyResult: number;
  /** A second call (the same expression) before answering. */
  pCallTwice: number;
}

const pick = <T>(items: readonly T[], random: () => number): T =>
  items[Math.floor(random() * items.length)] as T;

/** A near miss: the value moved by 1–2 (small numbers) or by 1–9 in one of its last two digits. */
function nearMiss(value: number, random: () => number): number {
  const magnitude = Math.abs(value) < 20 ? 1 : pick([1, 10], random);
  return value + pick([-1, 1], random) * magnitude * (1 + Math.floor(random() * (magnitude === 1 ? 2 : 9)));
}

/**
 * The student's turns for one problem: calls (`calc …`), then an answer. It
 * knows what the tool replies to its call (the tool is exact), so it needs no
 * view of the environment's turns.
 */
export function studentTurns(
  task: CalculatorTask,
  o: CalculatorCorpusOptions,
  random: () => number,
): () => string {
  const calls = random() < o.pCall[task.size] ? (random() < o.pCallTwice ? 2 : 1) : 0;
  const exact = random() < o.pCopyCall;
  const miscopyFirst = random() < 0.5;
  const a = exact || !miscopyFirst ? task.a : nearMiss(task.a, random);
  const b = exact || miscopyFirst ? task.b : nearMiss(task.b, random);
  let made = 0;
  return () => {
    if (made < calls) {
      made++;
      return `calc ${a} ${task.op} ${b}`;
    }
    if (made > 0) {
      const result = applyOp(task.op, a, b);
      return String(random() < o.pCopyResult ? result : nearMiss(result, random));
    }
    if (task.size === "small" && random() < o.pSmallRight) return String(task.answer);
    return String(nearMiss(task.answer, random));
  };
}

export function calculatorCorpus(
  tokenizer: RendererTokenizer,
  random: () => number,
  o: CalculatorCorpusOptions,
): Promise<Example[]> {
  return scriptedEpisodes(tokenizer, o.episodes, (reply) => {
    // As the committed model was built: the size is redrawn with each rejected
    // draw, so training holds about 47 % small problems rather than the
    // environment's half (calculatorTask(random, "train")).
    const task = drawFromSplit(
      random,
      "train",
      (r) => calculatorTask(r),
      calculatorKey,
      calculatorSplit("train"),
    );
    const turn = studentTurns(task, o, random);
    return { env: new CalculatorEnv(task, tokenizer), player: () => reply(turn()) };
  });
}
