// Rollout groups → the compact rows stored per trajectory (C6): the whole token
// sequence with its mask, the sampler's logprobs and the advantages trained on.
import type { TrajectoryInput } from "@opentinker/db";
import { modelInputPositionTokens } from "@opentinker/protocol";
import {
  type AdvantageOptions,
  groupAdvantages,
  type Trajectory,
  type TrajectoryGroup,
  totalReward,
  trajectoryDatums,
} from "@opentinker/sdk";

function flatten(trajectory: Trajectory, turnAdvantages: number[]) {
  const tokens: number[] = [];
  const mask: number[] = [];
  const logprobs: number[] = [];
  const advantages: number[] = [];
  for (const datum of trajectoryDatums({ trajectory, turnAdvantages })) {
    // Image positions are stored as IMAGE_POSITION_TOKEN (the images themselves are not kept).
    const input = modelInputPositionTokens(datum.modelInput);
    const targets = datum.lossFnInputs.targetTokens?.data ?? [];
    tokens.push(...input, targets[targets.length - 1] as number);
    mask.push(0, ...(datum.lossFnInputs.mask?.data ?? []));
    logprobs.push(0, ...(datum.lossFnInputs.logprobs?.data ?? []));
    advantages.push(0, ...(datum.lossFnInputs.advantages?.data ?? []));
  }
  return {
    tokens: Int32Array.from(tokens),
    mask: Uint8Array.from(mask),
    logprobs: Float32Array.from(logprobs),
    advantages: Float32Array.from(advantages),
  };
}

/** Every trajectory of a step, trained on or not (failed and constant groups are kept, advantage 0). */
export function trajectoryRows(
  groups: TrajectoryGroup[],
  step: number,
  options: AdvantageOptions = {},
): TrajectoryInput[] {
  // The window is trained at its newest version; older samples are stale by the difference (C4).
  const trainerVersion = Math.max(0, ...groups.flatMap((g) => g.trajectories.map((t) => t.policyVersion)));
  return groups.flatMap((group, groupIndex) => {
    const scored = new Map(groupAdvantages(group, options).map((s) => [s.trajectory, s.turnAdvantages]));
    return group.trajectories.map((trajectory, sampleIndex) => ({
      step,
      groupIndex,
      sampleIndex,
      snapshotVersion: trajectory.policyVersion,
      staleness: Math.max(0, trainerVersion - trajectory.policyVersion),
      reward: totalReward(trajectory),
      ...(trajectory.failure ? { failureReason: trajectory.failure } : {}),
      ...flatten(trajectory, scored.get(trajectory) ?? trajectory.transitions.map(() => 0)),
    }));
  });
}
