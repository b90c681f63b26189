// `arithmetic`: single turn, text. "What is 17 + 25?" → the number; exact match.
import type { Env, RendererTokenizer, RlDataset, StepResult } from "@opentinker/sdk";
import {
  malformed,
  type Prompted,
  parseInteger,
  rendererFor,
  scored,
  type TaskDatasetOptions,
  type TextEnvOptions,
  taskDataset,
} from "./text-env.ts";

export interface ArithmeticTask {
  a: number;
  b: number;
  op: ArithmeticOp;
  answer: number;
}

/** The operators of the arithmetic tasks (and of the calculator's calls). */
export const ARITHMETIC_OPS = ["+", "-", "*"] as const;
export type ArithmeticOp = (typeof ARITHMETIC_OPS)[number];

/** What `a op b` is: the one home of the operators' meaning. */
export const applyOp = (op: ArithmeticOp, a: number, b: number): number =>
  op === "+" ? a + b : op === "-" ? a - b : a * b;

/**
 * Operands 0–12: 507 problems, small enough that the built-in text model learns
 * each answer's neighbourhood and RL has a mode to sharpen (with 0–20 it knew
 * sums only to ±2, and products hardly at all).
 */
export const ARITHMETIC_MAX_OPERAND = 12;

export function arithmeticTask(random: () => number, maxOperand = ARITHMETIC_MAX_OPERAND): ArithmeticTask {
  const a = Math.floor(random() * (maxOperand + 1));
  const b = Math.floor(random() * (maxOperand + 1));
  const op = ARITHMETIC_OPS[Math.floor(random() * ARITHMETIC_OPS.length)] as ArithmeticOp;
  return { a, b, op, answer: applyOp(op, a, b) };
}

export const arithmeticKey = (t: ArithmeticTask) => `${t.a}${t.op}${t.b}`;

/** Every problem with operands 0–`maxOperand`, each operator, in a fixed order. */
export function everyArithmeticTask(maxOperand = ARITHMETIC_MAX_OPERAND): ArithmeticTask[] {
  const tasks: ArithmeticTask[] = [];
  for (const op of ARITHMETIC_OPS)
    for (let a = 0; a <= maxOperand; a++)
      for (let b = 0; b <= maxOperand; b++) tasks.push({ a, b, op, answer: applyOp(op, a, b) });
  return tasks;
}

export class ArithmeticEnv implements Env {
  private readonly renderer;

  constructor(
    readonly task: ArithmeticTask,
    tokenizer: RendererTokenizer,
    private readonly options: TextEnvOptions = {},
  ) {
    this.renderer = rendererFor(tokenizer, options);
  }

  async initialObservation(): Promise<Prompted> {
    const { a, b, op } = this.task;
    const content = `What is ${a} ${op} ${b}? Reply with the number only.`;
    return { observation: this.renderer.prompt([{ role: "user", content }]), stop: this.renderer.stop() };
  }

  async step(action: number[]): Promise<StepResult> {
    const answer = parseInteger(this.renderer, action);
    return answer === null ? malformed(this.options) : scored(answer === this.task.answer);
  }
}

export interface ArithmeticDatasetOptions extends TextEnvOptions, TaskDatasetOptions {
  maxOperand?: number;
}

/** Deterministic batches of groups, each group one task tried `groupSize` times. */
export function arithmeticDataset(o: ArithmeticDatasetOptions): RlDataset {
  return taskDataset(o, {
    tag: "arithmetic",
    draw: (r) => arithmeticTask(r, o.maxOperand),
    key: arithmeticKey,
    makeEnv: (task) => new ArithmeticEnv(task, o.tokenizer, o),
  });
}
