import { describe, expect, it } from "vitest";
import { buildRlDatum, buildSftDatum, lossInput } from "./datum.ts";
import {
  IMAGE_POSITION_TOKEN,
  modelInputLength,
  modelInputPositionTokens,
  modelInputTokens,
} from "./model-input.ts";

describe("SFT datums (C6)", () => {
  it("shift the sequence onto the target axis: input z[0..n-2], targets z[1..n-1], weights with them", () => {
    const datum = buildSftDatum({ sequence: [10, 11, 12, 13, 14], weights: [0, 0, 0, 1, 1] });
    expect(modelInputTokens(datum.modelInput)).toEqual([10, 11, 12, 13]);
    expect(lossInput(datum, "targetTokens")).toEqual([11, 12, 13, 14]);
    expect(lossInput(datum, "weights")).toEqual([0, 0, 1, 1]);
  });

  it("refuse weights that do not line up with the tokens, or are negative or not finite", () => {
    expect(() => buildSftDatum({ sequence: [1, 2, 3], weights: [0, 1] })).toThrow(
      /weights has 2 entries, tokens has 3/,
    );
    expect(() => buildSftDatum({ sequence: [1, 2, 3], weights: [0, -1, 1] })).toThrow(/weights\[1\] is -1/);
    expect(() => buildSftDatum({ sequence: [1, 2, 3], weights: [0, Number.NaN, 1] })).toThrow(
      /weights\[1\] is NaN/,
    );
    expect(() => buildSftDatum({ sequence: [1], weights: [1] })).toThrow(/at least 2 tokens/);
  });
});

describe("RL datums (C6)", () => {
  const sequence = [1, 2, 3, 4, 5, 6];
  const mask = [0, 0, 1, 1, 0, 1];
  const logprobs = [0, 0, -0.5, -1.5, 0, -0.25];

  it("carry targets, rollout logprobs, advantages and the explicit mask, shifted together", () => {
    const datum = buildRlDatum({ sequence, mask, logprobs, advantages: [0, 0, 2, 2, 0, 2] });
    expect(lossInput(datum, "targetTokens")).toEqual([2, 3, 4, 5, 6]);
    expect(lossInput(datum, "mask")).toEqual([0, 1, 1, 0, 1]);
    expect(lossInput(datum, "logprobs")).toEqual([0, -0.5, -1.5, 0, -0.25]);
    expect(lossInput(datum, "advantages")).toEqual([0, 2, 2, 0, 2]);
  });

  it("a zero advantage stays an action token: the mask, not the advantage, marks the span", () => {
    const datum = buildRlDatum({ sequence, mask, logprobs, advantages: 0 });
    expect(lossInput(datum, "mask")).toEqual([0, 1, 1, 0, 1]);
    expect(lossInput(datum, "advantages")).toEqual([0, 0, 0, 0, 0]);
  });

  it("a per-trajectory advantage lands on every action token and nowhere else", () => {
    const datum = buildRlDatum({ sequence, mask, logprobs, advantages: -1 });
    expect(lossInput(datum, "advantages")).toEqual([0, -1, -1, 0, -1]);
  });

  it("response-length normalisation divides advantages by the number of action tokens", () => {
    const datum = buildRlDatum({ sequence, mask, logprobs, advantages: 3, normalize: "responseLength" });
    expect(lossInput(datum, "advantages")).toEqual([0, 1, 1, 0, 1]);
  });

  it("refuses masks that are not 0/1, non-finite logprobs or advantages, and mismatched lengths", () => {
    expect(() => buildRlDatum({ sequence, mask: [0, 0, 2, 1, 0, 1], logprobs, advantages: 1 })).toThrow(
      /mask\[2\] is 2/,
    );
    expect(() =>
      buildRlDatum({ sequence, mask, logprobs: [0, 0, Number.NaN, 0, 0, 0], advantages: 1 }),
    ).toThrow(/logprobs\[2\] is NaN/);
    expect(() => buildRlDatum({ sequence, mask, logprobs, advantages: Number.POSITIVE_INFINITY })).toThrow(
      /advantages\[0\] is Infinity/,
    );
    expect(() => buildRlDatum({ sequence, mask: [0, 1], logprobs, advantages: 1 })).toThrow(
      /mask has 2 entries/,
    );
    expect(() => buildRlDatum({ sequence, mask: [1, 0, 1, 1, 0, 1], logprobs, advantages: 1 })).toThrow(
      /mask\[0\] must be 0/,
    );
  });

  it("multimodal sequences keep the image chunk in the input and shift per-position fields past it", () => {
    const input = {
      chunks: [
        { type: "encoded_text" as const, tokens: [1] },
        { type: "image" as const, format: "png" as const, data: "iVBORw0KGgo=", expectedTokens: 2 },
        { type: "encoded_text" as const, tokens: [7, 8] },
      ],
    };
    const datum = buildSftDatum({ sequence: { input, tokens: [1, 0, 0, 7, 8] }, weights: [0, 0, 0, 0, 1] });
    expect(modelInputLength(datum.modelInput)).toBe(4);
    expect(datum.modelInput.chunks[1]?.type).toBe("image");
    expect(lossInput(datum, "weights")).toEqual([0, 0, 0, 1]);
    expect(modelInputPositionTokens(datum.modelInput)).toEqual([
      1,
      IMAGE_POSITION_TOKEN,
      IMAGE_POSITION_TOKEN,
      7,
    ]);
    expect(() => modelInputTokens(datum.modelInput)).toThrow(/image chunk/);
  });
});
