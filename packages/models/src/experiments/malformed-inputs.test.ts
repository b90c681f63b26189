// Where a check's malformed actions fell, counted per input with the built-in
// text model's own tokenizer.
import { loadBaseModel } from "@opentinker/engine";
import type { ModelInput } from "@opentinker/protocol";
import type { RendererTokenizer, Trajectory, TrajectoryGroup } from "@opentinker/sdk";
import { beforeAll, describe, expect, it } from "vitest";
import { builtInModel, DEFAULT_TEXT_MODEL } from "../registry.ts";
import { lastMessage, malformedInputs } from "./malformed-inputs.ts";

let tok: RendererTokenizer;
beforeAll(async () => {
  const built = builtInModel(DEFAULT_TEXT_MODEL);
  const base = await loadBaseModel(built.dir, built.name);
  if (!base.tokenizer) throw new Error("the text model has no tokenizer");
  tok = base.tokenizer as RendererTokenizer;
});

const encode = (text: string) => tok.encode(text, { addSpecialTokens: false });
const prompt = (question: string) => `<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`;

function episode(observation: ModelInput, answer: string, malformed: boolean): TrajectoryGroup {
  const trajectory: Trajectory = {
    policyVersion: 1,
    transitions: [
      {
        observation,
        actionTokens: encode(answer),
        actionLogprobs: [],
        reward: malformed ? -0.1 : 0,
        done: true,
        metrics: { "format/malformed": malformed ? 1 : 0 },
      },
    ],
  };
  return { trajectories: [trajectory] };
}
const text = (t: string): ModelInput => ({ chunks: [{ type: "encoded_text", tokens: encode(t) }] });

describe("malformed actions by input", () => {
  it("counts each input's malformed and total actions, most malformed first, with its commonest answer", () => {
    const a = prompt("What is 12 - 1?");
    const b = prompt("What is 9 + 12?");
    const groups = [
      episode(text(a), "11-<|im_end|>", true),
      episode(text(a), "11-<|im_end|>", true),
      episode(text(a), "11-0<|im_end|>", true),
      episode(text(a), "11<|im_end|>", false),
      episode(text(b), "2-1<|im_end|>", true),
      episode(text(b), "21<|im_end|>", false),
      episode(text(prompt("What is 3 * 4?")), "12<|im_end|>", false),
    ];
    expect(malformedInputs(groups, tok)).toEqual([
      { input: "What is 12 - 1?", malformed: 3, actions: 4, example: "11-<|im_end|>" },
      { input: "What is 9 + 12?", malformed: 1, actions: 2, example: "2-1<|im_end|>" },
    ]);
    expect(malformedInputs(groups, tok, 1)).toHaveLength(1);
  });

  it("names a turn by the last message the action answered, not the assistant's opening", () => {
    const context = `${prompt("Guess a number.")}50<|im_end|>\n<|im_start|>user\nLower.<|im_end|>\n<|im_start|>assistant\n`;
    expect(lastMessage(context)).toBe("Lower.");
    expect(lastMessage(tok.decode(encode(context)))).toBe("Lower.");
  });

  it("tells two pictures with the same question apart", () => {
    // As the shapes environment renders it: the picture first, then the question's turn.
    const picture = (data: string): ModelInput => ({
      chunks: [
        { type: "image", format: "png", data, expectedTokens: 4 },
        { type: "encoded_text", tokens: encode(prompt("How many?")) },
      ],
    });
    const found = malformedInputs(
      [episode(picture("AAAA"), "x", true), episode(picture("BBBB"), "y", true)],
      tok,
    );
    expect(found).toHaveLength(2);
    expect(found[0]?.input).toMatch(/^\[image [0-9a-f]{8}\] How many\?$/);
    expect(found[0]?.input).not.toBe(found[1]?.input);
  });
});
