import { describe, expect, it } from "vitest";
import { messageRoles, tokenKind, tokenKinds, turnAdvantages, visibleSegments } from "./tokens.ts";

describe("trajectory tokens", () => {
  it("a zero advantage still counts as an action token", () => {
    expect(tokenKind(1)).toBe("action");
    expect(turnAdvantages([0, 1, 1], [0, 0, 0])).toEqual([0]);
  });

  it("anything but mask 1 is an observation", () => {
    expect(tokenKind(0)).toBe("observation");
    expect(tokenKind(undefined)).toBe("observation");
  });

  it("spaces, tabs and newlines become visible marks; text stays as is", () => {
    expect(visibleSegments(" the")).toEqual([
      { text: "·", mark: true },
      { text: "the", mark: false },
    ]);
    expect(visibleSegments("\n\t")).toEqual([{ text: "↵\n→", mark: true }]);
  });

  it("an empty piece still shows", () => {
    expect(visibleSegments("")).toEqual([{ text: "∅", mark: true }]);
  });

  it("one advantage per turn, read from the action tokens only", () => {
    // prompt, turn 1 (adv 0.5), observation, turn 2 (adv -0.25)
    const mask = [0, 0, 1, 1, 0, 1];
    const advantages = [9, 9, 0.5, 0.5, 9, -0.25];
    expect(turnAdvantages(mask, advantages)).toEqual([0.5, -0.25]);
    expect(turnAdvantages([0, 0], [0, 0])).toEqual([]);
  });

  // system, user, assistant (calls), tool (replies), assistant (answers): as the calculator environment renders them.
  const turns = [
    ["<|im_start|>", "user", "\n", "What", "?", "<|im_end|>", "\n"],
    ["<|im_start|>", "assistant", "\n", "calc", " 3", "<|im_end|>", "\n"],
    ["<|im_start|>", "tool", "\n", "3", "<|im_end|>", "\n"],
    ["<|im_start|>", "assistant", "\n", "3", "<|im_end|>"],
  ];
  const pieces = turns.flat();
  // The model wrote "calc 3<|im_end|>" and "3<|im_end|>".
  const mask = pieces.map((_, i) => ([10, 11, 12, 23, 24].includes(i) ? 1 : 0));

  it("reads each token's ChatML role, the header included", () => {
    const roles = messageRoles(pieces).map((r) => r.role);
    expect(roles.slice(0, 7)).toEqual(Array(7).fill("user"));
    expect(roles.slice(14, 20)).toEqual(Array(6).fill("tool"));
    expect(messageRoles(["a", "<|im_start|>", "sys", "tem\nhi"]).map((r) => r.role)).toEqual([
      "",
      "system",
      "system",
      "system",
    ]);
  });

  it("a turn answered by a tool message is a tool call; the tool message is tool output", () => {
    const kinds = tokenKinds(mask, pieces);
    expect(kinds.slice(10, 13)).toEqual(["tool-call", "tool-call", "tool-call"]);
    expect(kinds.slice(14, 20)).toEqual(Array(6).fill("tool-output"));
    expect(kinds.slice(23, 25)).toEqual(["action", "action"]);
    expect(kinds.slice(0, 7)).toEqual(Array(7).fill("observation"));
  });

  it("without the tokens' text, only actions and observations", () => {
    expect(tokenKinds(mask)).toEqual(mask.map(tokenKind));
    expect(tokenKinds(mask, pieces.slice(1))).toEqual(mask.map(tokenKind));
  });
});
