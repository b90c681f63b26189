import { lossInput, modelInputFromTokens } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import type { Trajectory } from "../rollout/trajectory.ts";
import { scoreStep } from "./step-trajectories.ts";

const trajectory = (reward: number, policyVersion = 1, failure?: string): Trajectory => ({
  transitions: [
    {
      observation: modelInputFromTokens([1, 2]),
      actionTokens: [3, 4],
      actionLogprobs: [-0.5, -0.25],
      reward,
      done: true,
      metrics: {},
    },
  ],
  policyVersion,
  ...(failure ? { failure } : {}),
});

describe("a step's trajectories and the datums they became", () => {
  it("every trajectory is kept in order; only scored ones carry an advantage", () => {
    const mixed = { trajectories: [trajectory(1), trajectory(0), trajectory(0, 1, "env threw")] };
    const constant = { trajectories: [trajectory(1), trajectory(1)] };
    const { trajectories } = scoreStep([mixed, constant], 1);
    expect(trajectories.map((t) => [t.groupIndex, t.sampleIndex, t.trained])).toEqual([
      [0, 0, true],
      [0, 1, true],
      [0, 2, false],
      [1, 0, false],
      [1, 1, false],
    ]);
    const advantages = trajectories.map((t) => t.datums.flatMap((d) => lossInput(d, "advantages")));
    expect(advantages).toEqual([
      [0, 0.5, 0.5],
      [0, -0.5, -0.5],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);
  });

  it("a trajectory too stale to keep is not trained on, and counts as dropped", () => {
    const group = { trajectories: [trajectory(1, 1), trajectory(0, 4)] };
    const step = scoreStep([group], 4, { staleness: { maxStaleness: 2, mode: "drop" } });
    expect(step.trajectories.map((t) => [t.staleness, t.trained])).toEqual([
      [3, false],
      [0, true],
    ]);
    expect([step.maxStaleness, step.dropped]).toEqual([3, 1]);
  });
});
