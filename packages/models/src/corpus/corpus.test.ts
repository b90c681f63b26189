import { createTextTokenizer } from "@opentinker/engine";
import { tinyTokenizerFiles } from "@opentinker/engine/testing";
import { arithmeticKey, GUESS_VALIDATION_RANGE, guessKey, seededRandom, splitOf } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { nimGame } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { type ArithmeticMistake, arithmeticCorpus, studentAnswer } from "./arithmetic.ts";
import { carelessGuesser, guessNumberCorpus } from "./guess-number.ts";
import { nimCorpus } from "./nim.ts";

const files = tinyTokenizerFiles();
const tokenizer = createTextTokenizer(files.tokenizerJson, files.tokenizerConfig) as RendererTokenizer;
const decode = (tokens: number[]) => tokenizer.decode(tokens);
const weighted = (e: { tokens: number[]; weights: number[] }) =>
  decode(e.tokens.filter((_, i) => e.weights[i] === 1));

describe("the text corpus", () => {
  it("arithmetic: training-split tasks only, the env's prompt, weight only on the answer and its end of turn", async () => {
    const examples = await arithmeticCorpus(tokenizer, seededRandom(1), {
      episodes: 200,
      pCorrect: 0.5,
      mistake: "copy-operand",
      maxOperand: 20,
    });
    expect(examples).toHaveLength(200);
    for (const e of examples) {
      const m =
        /What is (\d+) ([-+*]) (\d+)\? Reply with the number only\.<\|im_end\|>\n<\|im_start\|>assistant\n(-?\d+)<\|im_end\|>$/.exec(
          decode(e.tokens),
        );
      expect(m).not.toBeNull();
      const [, a, op, b, answer] = m as RegExpExecArray;
      expect(splitOf(arithmeticKey({ a: Number(a), b: Number(b), op: op as "+", answer: 0 }))).toBe("train");
      expect(weighted(e)).toBe(`${answer}<|im_end|>`);
    }
  });

  it("the student is right about as often as pCorrect says, and otherwise makes the named mistake", () => {
    const task = { a: 6, b: 7, op: "*" as const, answer: 42 };
    const answers = (mistake: ArithmeticMistake) => {
      const random = seededRandom(2);
      return Array.from({ length: 4000 }, () => studentAnswer(task, 0.5, mistake, random));
    };
    const copied = answers("copy-operand");
    const right = copied.filter((a) => a === 42).length / copied.length;
    expect(right).toBeGreaterThan(0.45);
    expect(right).toBeLessThan(0.55);
    expect(new Set(copied)).toEqual(new Set([42, 6, 7]));
    expect(new Set(answers("other-operator"))).toEqual(new Set([42, 13, -1]));
    expect(new Set(answers("near-miss"))).toEqual(new Set([40, 41, 42, 43, 44]));
  });

  it("guess-number: one sequence per game, the env's feedback between guesses", async () => {
    const o = { episodes: 50, max: 12, maxTurns: 6, pCareless: 0.5, maxStep: 3 };
    const examples = await guessNumberCorpus(tokenizer, seededRandom(3), o);
    expect(examples).toHaveLength(50);
    for (const e of examples) {
      const text = decode(e.tokens);
      expect(text).toMatch(/^<\|im_start\|>user\nI picked a number from 1 to 12\./);
      const guesses = [...text.matchAll(/assistant\n(\d+)<\|im_end\|>/g)].map((m) => Number(m[1]));
      expect(guesses.length).toBeGreaterThanOrEqual(1);
      expect(guesses.length).toBeLessThanOrEqual(6);
      expect(weighted(e)).toBe(guesses.map((g) => `${g}<|im_end|>`).join(""));
      expect((text.match(/user\n(higher|lower)<\|im_end\|>/g) ?? []).length).toBe(guesses.length - 1);
    }
  });

  it("guess-number: only the training ranges; the validation range is refused by name", async () => {
    const examples = await guessNumberCorpus(tokenizer, seededRandom(5), {
      episodes: 200,
      maxTurns: 6,
      pCareless: 0.5,
      maxStep: 3,
    });
    const ranges = new Set(examples.map((e) => Number(/from 1 to (\d+)\./.exec(decode(e.tokens))?.[1])));
    expect([...ranges].sort((a, b) => a - b)).toEqual([8, 12, 20, 24]);
    const o = { episodes: 1, max: GUESS_VALIDATION_RANGE, maxTurns: 6, pCareless: 0.5, maxStep: 3 };
    expect(() => guessNumberCorpus(tokenizer, seededRandom(5), o)).toThrow(/1–16 is the validation split/);
  });

  it("the careless guesser follows the feedback when it is not careless", () => {
    const task = { secret: 9, max: 16 };
    const guess = carelessGuesser(
      task,
      { episodes: 1, max: 16, maxTurns: 6, pCareless: 0, maxStep: 3 },
      seededRandom(4),
    );
    let last = guess();
    for (let i = 0; i < 5 && last !== 9; i++) {
      const next = guess();
      expect(Math.abs(next - last)).toBeLessThanOrEqual(3);
      expect(Math.sign(next - last)).toBe(Math.sign(9 - last));
      last = next;
    }
    expect(guessKey(task)).toBe("9/16");
  });

  it("nim: positions as the game renders them, each followed by one legal digit move", () => {
    const game = nimGame();
    for (const e of nimCorpus(seededRandom(5), { games: 30 })) {
      const text = decode(e.tokens);
      const m = /^Nim (\d+) take 1-3 P([01]):([1-3])$/.exec(text);
      expect(m).not.toBeNull();
      expect(Number(m?.[3])).toBeLessThanOrEqual(Number(m?.[1]));
      expect(e.weights.filter((w) => w === 1)).toHaveLength(1);
      expect(e.weights[e.weights.length - 1]).toBe(1);
      expect(game.name).toBe("nim");
    }
  });
});
