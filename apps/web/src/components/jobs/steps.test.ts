import { describe, expect, it } from "vitest";
import { latestStep, liveState, stepsDone, totalSteps } from "./steps.ts";

describe("job steps", () => {
  it("the newest step is numbered as the charts number it: one less than the steps stored", () => {
    expect(latestStep(198)).toBe(197);
    expect(latestStep(1)).toBe(0);
    expect(latestStep(0)).toBeUndefined();
  });

  it("progress counts the steps done, against the total when the config has one", () => {
    expect(stepsDone(198, 400)).toBe("198 of 400 done");
    expect(stepsDone(3, undefined)).toBe("3 done");
    expect(totalSteps({ kind: "RL", config: { steps: 400 } })).toBe(400);
    expect(totalSteps({ kind: "RL", config: {} })).toBeUndefined();
  });

  it("an SFT job's total is its epochs times its batches, an evaluation's one step", () => {
    const conversations = Array.from({ length: 5 }, () => ({ messages: [{ role: "user", content: "hi" }] }));
    expect(totalSteps({ kind: "SFT", config: { conversations, batchSize: 2, epochs: 3 } })).toBe(9);
    expect(totalSteps({ kind: "EVAL", config: { groups: 4 } })).toBe(1);
  });

  it("the live indicator says ended once the job is no longer running or queued, whatever the socket", () => {
    expect(liveState("live", true)).toBe("live");
    expect(liveState("reconnecting", true)).toBe("reconnecting");
    expect(liveState("live", false)).toBe("ended");
    expect(liveState("failed", false)).toBe("ended");
  });
});
