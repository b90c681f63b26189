import { describe, expect, it } from "vitest";
import { tokenKind, turnAdvantages, visibleSegments } from "./tokens.ts";

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
});
