// `arithmetic`: single turn, text. "What is 17 + 25?" → the number; exact match.
import type { Env, EnvGroupBuilder, RendererTokenizer, RlDataset, StepResult } from "@opentinker/sdk";
import { drawFromSplit, type Split, seededRandom } from "./split.ts";
import {
  DEFAULT_FORMAT_PENALTY,
  type Prompted,
  parseInteger,
  rendererFor,
  type TextEnvOptions,
} from "./text-env.ts";

export interface ArithmeticTask {
  a: number;
  b: number;
  op: "+" | "-" | "*";
  answer: number;
}

const OPS = ["+", "-", "*"] as const;

export function arithmeticTask(random: () => number, maxOperand = 20): ArithmeticTask {
  const a = Math.floor(random() * (maxOperand + 1));
  const b = Math.floor(random() * (maxOperand + 1));
  const op = OPS[Math.floor(random() * OPS.length)] as ArithmeticTask["op"];
  const answer = op === "+" ? a + b : op === "-" ? a - b : a * b;
  return { a, b, op, answer };
}

export const arithmeticKey = (t: ArithmeticTask) => `${t.a}${t.op}${t.b}`;

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
    if (answer === null) {
      return {
        reward: this.options.formatPenalty ?? DEFAULT_FORMAT_PENALTY,
        done: true,
        metrics: { "format/malformed": 1 },
      };
    }
    const correct = answer === this.task.answer ? 1 : 0;
    return { reward: correct, done: true, metrics: { "format/malformed": 0, correct } };
  }
}

export interface ArithmeticDatasetOptions extends TextEnvOptions {
  tokenizer: RendererTokenizer;
  split: Split;
  seed: number;
  batches: number;
  groupsPerBatch: number;
  /** Attempts per task (GRPO group size). */
  groupSize: number;
  maxOperand?: number;
}

/** Deterministic batches of groups, each group one task tried `groupSize` times. */
export function arithmeticDataset(o: ArithmeticDatasetOptions): RlDataset {
  return {
    batches: o.batches,
    batch(index: number): EnvGroupBuilder[] {
      const random = seededRandom(o.seed * 1_000_003 + index);
      return Array.from({ length: o.groupsPerBatch }, () => {
        const task = drawFromSplit(random, o.split, (r) => arithmeticTask(r, o.maxOperand), arithmeticKey);
        return {
          tag: "arithmetic",
          makeEnvs: async () =>
            Array.from({ length: o.groupSize }, () => new ArithmeticEnv(task, o.tokenizer, o)),
        };
      });
    },
  };
}
