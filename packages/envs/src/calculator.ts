// `calculator`: multi-turn, text, with a tool. "What is 347 * 58?" The model
// may answer at once or first call the calculator (`calc 347 * 58`); the
// environment evaluates what the model wrote and replies in a `tool` turn with
// the result, which enters the context (masked out of the loss, like every
// observation) before the model's next turn. Reward: 1 for the right final
// answer, less a small cost per call. Half the problems are single-digit facts
// a model can know; half have operands too large for it to compute in one step,
// so a policy that learns when to call pays the cost only where it helps.
import type { ModelInput } from "@opentinker/protocol";
import type { ChatRenderer, Env, RendererTokenizer, RlDataset, StepResult } from "@opentinker/sdk";
import { ARITHMETIC_OPS, type ArithmeticOp, applyOp } from "./arithmetic.ts";
import { type Split, splitOf } from "./split.ts";
import {
  appendReply,
  DEFAULT_FORMAT_PENALTY,
  type Prompted,
  parseInteger,
  rendererFor,
  type TaskDatasetOptions,
  type TextEnvOptions,
  taskDataset,
} from "./text-env.ts";

export type CalculatorOp = ArithmeticOp;
export type CalculatorSize = "small" | "large";

export interface CalculatorTask {
  a: number;
  b: number;
  op: CalculatorOp;
  answer: number;
  size: CalculatorSize;
}

/** The cost of one calculator call, unless the config says otherwise. */
export const CALCULATOR_CALL_COST = 0.1;
/** Calls an episode may make before it must answer. */
export const CALCULATOR_MAX_CALLS = 2;
/** A call is longer than an answer: `calc 347 * 58` and the end of the turn. */
export const CALCULATOR_MAX_TOKENS = 16;

/** How the environment introduces its tool (the system turn of every prompt). */
export const CALCULATOR_SYSTEM =
  "You have a calculator: write calc and an expression, such as calc 12 * 34, and it replies with the result.";

const uniform = (random: () => number, lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

/**
 * Small: both operands 0–9 (facts a model can know). Large: three-digit sums and
 * differences, two-digit products (beyond the built-in models in one step).
 * Half of each split is small: the size is drawn once, then a large problem is
 * redrawn until it falls in `split` (large problems split by key hash; the 300
 * small facts are what a model is taught, so they are in both splits and
 * validation asks whether the policy still answers them without the tool).
 */
export function calculatorTask(random: () => number, split?: Split): CalculatorTask {
  const size: CalculatorSize = random() < 0.5 ? "small" : "large";
  for (;;) {
    const op = ARITHMETIC_OPS[Math.floor(random() * ARITHMETIC_OPS.length)] as CalculatorOp;
    const [lo, hi] = size === "small" ? [0, 9] : op === "*" ? [10, 99] : [100, 999];
    const a = uniform(random, lo, hi);
    const b = uniform(random, lo, hi);
    const task: CalculatorTask = { a, b, op, answer: applyOp(op, a, b), size };
    if (!split || size === "small" || splitOf(calculatorKey(task)) === split) return task;
  }
}

export const calculatorKey = (t: CalculatorTask) => `${t.a}${t.op}${t.b}`;

/** A task's split as `calculatorTask` decides it: small facts are in `wanted`, whichever it is. */
export const calculatorSplit =
  (wanted: Split) =>
  (t: CalculatorTask): Split =>
    t.size === "small" ? wanted : splitOf(calculatorKey(t));

/** A call as the model writes it: `calc <a> <op> <b>`, or null when the text is not one. */
export function parseCall(text: string): { a: number; op: CalculatorOp; b: number } | null {
  const m = /^calc\s+(-?\d{1,6})\s*([+\-*])\s*(-?\d{1,6})$/.exec(text.trim());
  if (!m) return null;
  return { a: Number(m[1]), op: m[2] as CalculatorOp, b: Number(m[3]) };
}

export interface CalculatorOptions extends TextEnvOptions {
  callCost?: number;
  maxCalls?: number;
}

export class CalculatorEnv implements Env {
  private readonly renderer: ChatRenderer;
  private context: ModelInput | null = null;
  private calls = 0;

  constructor(
    readonly task: CalculatorTask,
    private readonly tokenizer: RendererTokenizer,
    private readonly options: CalculatorOptions = {},
  ) {
    this.renderer = rendererFor(tokenizer, { maxTokens: options.maxTokens ?? CALCULATOR_MAX_TOKENS });
  }

  async initialObservation(): Promise<Prompted> {
    const { a, b, op } = this.task;
    this.context = this.renderer.prompt([
      { role: "system", content: CALCULATOR_SYSTEM },
      { role: "user", content: `What is ${a} ${op} ${b}? Reply with the number only.` },
    ]);
    return { observation: this.context, stop: this.renderer.stop() };
  }

  async step(action: number[]): Promise<StepResult> {
    const { text, complete } = this.renderer.parse(action);
    const call = complete ? parseCall(text) : null;
    if (call) return this.callTool(action, call);
    const answer = parseInteger(this.renderer, action);
    if (answer === null) return this.end(this.options.formatPenalty ?? DEFAULT_FORMAT_PENALTY, null);
    const correct = answer === this.task.answer;
    return this.end(correct ? 1 : 0, correct);
  }

  private callTool(action: number[], call: { a: number; op: CalculatorOp; b: number }): StepResult {
    if (this.calls >= (this.options.maxCalls ?? CALCULATOR_MAX_CALLS)) {
      this.calls++;
      return this.end(0, false, true);
    }
    this.calls++;
    const result = String(applyOp(call.op, call.a, call.b));
    this.context = appendReply(this.tokenizer, this.context as ModelInput, action, "tool", result);
    return { reward: 0, done: false, nextObservation: this.context, metrics: {} };
  }

  /** The episode's end: `base` less the cost of every call; `correct` null when the answer was malformed. */
  private end(base: number, correct: boolean | null, overLimit = false): StepResult {
    const size = this.task.size;
    const called = this.calls > 0 ? 1 : 0;
    return {
      reward: base - (this.options.callCost ?? CALCULATOR_CALL_COST) * this.calls,
      done: true,
      metrics: {
        "format/malformed": correct === null ? 1 : 0,
        correct: correct ? 1 : 0,
        "tool/calls": this.calls,
        [`${size}/correct`]: correct ? 1 : 0,
        [`${size}/called`]: called,
        "tool/over_limit": overLimit ? 1 : 0,
      },
    };
  }
}

export interface CalculatorDatasetOptions extends CalculatorOptions, TaskDatasetOptions {}

export function calculatorDataset(o: CalculatorDatasetOptions): RlDataset {
  return taskDataset(o, {
    tag: "calculator",
    draw: (random) => calculatorTask(random, o.split),
    key: calculatorKey,
    split: calculatorSplit(o.split),
    makeEnv: (task) => new CalculatorEnv(task, o.tokenizer, o),
  });
}
