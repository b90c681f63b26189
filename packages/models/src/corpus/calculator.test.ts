import { createTextTokenizer } from "@opentinker/engine";
import { tinyTokenizerFiles } from "@opentinker/engine/testing";
import { applyOp, calculatorKey, parseCall, seededRandom, splitOf } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { CALCULATOR_STUDENT } from "../recipes.ts";
import { calculatorCorpus, studentTurns } from "./calculator.ts";

const files = tinyTokenizerFiles();
const tokenizer = createTextTokenizer(files.tokenizerJson, files.tokenizerConfig) as RendererTokenizer;
const decode = (tokens: number[]) => tokenizer.decode(tokens);

const STUDENT = { ...CALCULATOR_STUDENT, episodes: 300 };

describe("the calculator corpus", () => {
  it("plays the env: its prompt, the tool's replies unweighted, weight on the student's turns only", async () => {
    const examples = await calculatorCorpus(tokenizer, seededRandom(1), STUDENT);
    expect(examples).toHaveLength(300);
    let calls = 0;
    for (const e of examples) {
      const text = decode(e.tokens);
      const task = /What is (\d+) ([-+*]) (\d+)\?/.exec(text);
      expect(task).not.toBeNull();
      const [, a, op, b] = task as RegExpExecArray;
      const key = calculatorKey({ a: Number(a), b: Number(b), op: op as "+", answer: 0, size: "large" });
      if (Number(a) > 9 || Number(b) > 9) expect(splitOf(key)).toBe("train");
      // Every assistant turn is weighted whole (its text and end of turn); nothing else is.
      const turns = [...text.matchAll(/<\|im_start\|>assistant\n(.*?)<\|im_end\|>/g)].map(
        (m) => m[1] as string,
      );
      const weighted = decode(e.tokens.filter((_, i) => e.weights[i] === 1));
      expect(weighted).toBe(turns.map((t) => `${t}<|im_end|>`).join(""));
      // Calls come first, each answered by the tool with what the call computes; then a number.
      const replies = [...text.matchAll(/<\|im_start\|>tool\n(-?\d+)<\|im_end\|>/g)].map((m) => Number(m[1]));
      const made = turns.slice(0, -1).map((t) => parseCall(t));
      expect(made.every((c) => c !== null)).toBe(true);
      expect(replies).toEqual(made.map((c) => c && applyOp(c.op, c.a, c.b)));
      expect(turns.at(-1)).toMatch(/^-?\d+$/);
      calls += made.length;
    }
    expect(calls).toBeGreaterThan(0);
  });

  it("calls as often as pCall says, and copies as often as pCopyCall says", () => {
    const random = seededRandom(2);
    const task = { a: 347, b: 58, op: "*" as const, answer: 20126, size: "large" as const };
    let called = 0;
    let exact = 0;
    for (let i = 0; i < 4000; i++) {
      const first = studentTurns(task, STUDENT, random)();
      const call = parseCall(first);
      if (!call) continue;
      called++;
      if (call.a === 347 && call.b === 58) exact++;
    }
    expect(called / 4000).toBeGreaterThan(0.37);
    expect(called / 4000).toBeLessThan(0.43);
    expect(exact / called).toBeGreaterThan(0.86);
    expect(exact / called).toBeLessThan(0.94);
  });
});
