import type { ModelInput } from "@opentinker/protocol";

/** One turn: what the model saw, what it generated (recorded before the env saw it), what came back. */
export interface Transition {
  observation: ModelInput;
  actionTokens: number[];
  actionLogprobs: number[];
  reward: number;
  done: boolean;
  metrics: Record<string, number>;
}

export interface Trajectory {
  transitions: Transition[];
  /** The policy version (snapshot) whose sampler generated every action (C4). */
  policyVersion: number;
  /** Set when the environment threw, returned a bad reward or ran past the context. */
  failure?: string;
}

export interface TrajectoryGroup {
  trajectories: Trajectory[];
  tag?: string;
}

export const totalReward = (t: Trajectory) => t.transitions.reduce((sum, tr) => sum + tr.reward, 0);
