import { describe, expect, it } from "vitest";
import { preTokens, trainBpe } from "./train-bpe.ts";

const options = { maxMerges: 50, minFrequency: 2, specialTokens: ["<|im_end|>"] };
const corpus = ["What is 12 + 7?<|im_end|>", "What is 3 * 45?<|im_end|>", "What is 19 - 20?<|im_end|>"];

describe("trainBpe", () => {
  it("splits like Qwen2: single digits, letter runs with their leading space, specials removed", () => {
    expect(preTokens("What is 12 + 7?<|im_end|>\n", ["<|im_end|>"])).toEqual([
      "What",
      " is",
      " ",
      "1",
      "2",
      " +",
      " ",
      "7",
      "?",
      "\n",
    ]);
  });

  it("learns the corpus's repeated words and never merges digits or across specials", () => {
    const merges = trainBpe(corpus, options);
    const made = merges.map(([a, b]) => a + b);
    expect(made).toContain("What");
    expect(made).toContain(" is");
    expect(made.some((t) => /\d/.test(t))).toBe(false);
    expect(made.some((t) => t.includes("<|"))).toBe(false);
  });

  it("is deterministic: the same corpus in any order gives the same merges", () => {
    expect(trainBpe([...corpus].reverse(), options)).toEqual(trainBpe(corpus, options));
  });

  it("refuses a non-ASCII corpus, naming the character", () => {
    expect(() => trainBpe(["café"], options)).toThrow(/ASCII.*"é"/);
  });
});
