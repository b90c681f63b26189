// One RL step's trajectories, each with the datums it became (C6): the loop
// trains on exactly these and a server stores exactly these, so what is stored
// is what was trained on (a KL penalty folded into the advantages included).
import type { Datum } from "@opentinker/protocol";
import type { Trajectory, TrajectoryGroup } from "../rollout/trajectory.ts";
import { type AdvantageOptions, groupAdvantages } from "./advantages.ts";
import { type DatumOptions, trajectoryDatums } from "./datums.ts";
import { applyStaleness, type StalenessPolicy } from "./staleness.ts";

export interface StepTrajectory {
  groupIndex: number;
  sampleIndex: number;
  trajectory: Trajectory;
  /** Versions behind the trainer (C4). */
  staleness: number;
  /** Whether it was trained on (not failed, not in a constant group, not too stale). */
  trained: boolean;
  /** Its datums as trained on; advantage 0 throughout when it was not trained on. */
  datums: Datum[];
}

export interface StepTrajectoryOptions {
  advantages?: AdvantageOptions;
  datums?: DatumOptions;
  staleness?: StalenessPolicy;
}

export interface ScoredStep {
  trajectories: StepTrajectory[];
  /** Over the scored trajectories (failed and constant groups have no advantage to be stale with). */
  maxStaleness: number;
  /** Scored trajectories left out for staleness. */
  dropped: number;
}

/** Every trajectory of a step, trained on or not, with its advantages and datums. */
export function scoreStep(
  groups: TrajectoryGroup[],
  trainerVersion: number,
  options: StepTrajectoryOptions = {},
): ScoredStep {
  const step: ScoredStep = { trajectories: [], maxStaleness: 0, dropped: 0 };
  groups.forEach((group, groupIndex) => {
    const scored = new Map(groupAdvantages(group, options.advantages).map((s) => [s.trajectory, s]));
    group.trajectories.forEach((trajectory, sampleIndex) => {
      const { staleness, keep } = applyStaleness(trajectory.policyVersion, trainerVersion, options.staleness);
      const score = scored.get(trajectory);
      if (score) step.maxStaleness = Math.max(step.maxStaleness, staleness);
      if (score && !keep) step.dropped++;
      const trained = score !== undefined && keep;
      const turnAdvantages = trained ? score.turnAdvantages : trajectory.transitions.map(() => 0);
      const datums = trajectoryDatums({ trajectory, turnAdvantages }, options.datums);
      step.trajectories.push({ groupIndex, sampleIndex, trajectory, staleness, trained, datums });
    });
  });
  return step;
}
