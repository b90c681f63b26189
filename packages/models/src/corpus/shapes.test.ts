import { createTextTokenizer } from "@opentinker/engine";
import { SHAPE_KINDS, type ShapesTask } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { vlTokenizerFiles } from "../tokenizer/build-vl.ts";
import { exampleText, shapesCorpus, studentShapesAnswer } from "./shapes.ts";

const files = vlTokenizerFiles([], 128);
const tokenizer = createTextTokenizer(files.tokenizerJson, files.tokenizerConfig) as RendererTokenizer;
const IMAGE = files.ids.image;
const ENV = { size: 32, imageTokens: 16 };

const NAME = "Which shape is this: circle, square or triangle? Reply with the word only.";
const COUNT = "How many shapes are in the picture? Reply with the number only.";

describe("the shapes corpus", () => {
  it("the environment's observation (image chunk, then the ChatML question) and the student's answer; weight only on the answer and its end of turn", async () => {
    const examples = await shapesCorpus(tokenizer, IMAGE, { seed: 1, episodes: 60, pCorrect: 0.3, env: ENV });
    expect(examples).toHaveLength(60);
    const asked = new Set<string>();
    for (const e of examples) {
      const [image, text] = e.input?.chunks ?? [];
      expect(image).toMatchObject({ type: "image", format: "png", expectedTokens: 16 });
      expect(text?.type).toBe("encoded_text");
      expect(e.tokens.slice(0, 16)).toEqual(new Array(16).fill(IMAGE));
      expect(e.tokens.slice(16)).not.toContain(IMAGE);
      const m =
        /^<\|im_start\|>user\n(.*)<\|im_end\|>\n<\|im_start\|>assistant\n(circle|square|triangle|\d)<\|im_end\|>$/.exec(
          exampleText(tokenizer, e),
        );
      expect(m).not.toBeNull();
      const [, question, answer] = m as RegExpExecArray;
      asked.add(question as string);
      expect(
        question === NAME ? SHAPE_KINDS.includes(answer as "circle") : /^[1-5]$/.test(answer as string),
      ).toBe(true);
      const weighted = e.tokens.filter((_, i) => e.weights[i] === 1);
      expect(tokenizer.decode(weighted)).toBe(`${answer}<|im_end|>`);
      expect(e.weights.every((w) => w === 0 || w === 1)).toBe(true);
    }
    expect(asked).toEqual(new Set([NAME, COUNT]));
  });

  it("is the same for the same seed and differs for another", async () => {
    const o = { seed: 4, episodes: 10, pCorrect: 0.3, env: ENV };
    const a = await shapesCorpus(tokenizer, IMAGE, o);
    expect(await shapesCorpus(tokenizer, IMAGE, o)).toEqual(a);
    expect(await shapesCorpus(tokenizer, IMAGE, { ...o, seed: 5 })).not.toEqual(a);
  });

  it("the student is right about as often as pCorrect says; otherwise it names the next shape or counts one too many", () => {
    const name: ShapesTask = { question: "name", answer: "square", shapes: [] };
    const count: ShapesTask = { question: "count", answer: "3", shapes: [] };
    const draw = (task: ShapesTask, seed: number) => {
      let s = seed;
      const random = () => {
        s = (s * 16807) % 2147483647;
        return s / 2147483647;
      };
      return Array.from({ length: 4000 }, () => studentShapesAnswer(task, 0.3, random));
    };
    const names = draw(name, 7);
    expect(new Set(names)).toEqual(new Set(["square", "triangle"]));
    const right = names.filter((a) => a === "square").length / names.length;
    expect(right).toBeGreaterThan(0.27);
    expect(right).toBeLessThan(0.33);
    expect(new Set(draw(count, 8))).toEqual(new Set(["3", "4"]));
  });
});
