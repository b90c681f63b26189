// A step's trajectories → the compact rows stored per trajectory (C6): the whole
// token sequence with its mask, the sampler's logprobs and the advantages, taken
// from the datums the step trained on (the RL loop's step result), so what is
// stored is what was trained on.
import type { TrajectoryInput } from "@opentinker/db";
import { modelInputPositionTokens } from "@opentinker/protocol";
import { type StepTrajectory, totalReward } from "@opentinker/sdk";

function flatten(datums: StepTrajectory["datums"]) {
  const tokens: number[] = [];
  const mask: number[] = [];
  const logprobs: number[] = [];
  const advantages: number[] = [];
  for (const datum of datums) {
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
export function trajectoryRows(step: number, trajectories: StepTrajectory[]): TrajectoryInput[] {
  return trajectories.map(({ trajectory, groupIndex, sampleIndex, staleness, datums }) => ({
    step,
    groupIndex,
    sampleIndex,
    snapshotVersion: trajectory.policyVersion,
    staleness: Math.max(0, staleness),
    reward: totalReward(trajectory),
    ...(trajectory.failure ? { failureReason: trajectory.failure } : {}),
    ...flatten(datums),
  }));
}
