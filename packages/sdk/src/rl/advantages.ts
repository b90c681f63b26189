// Group-relative advantages (C10): each trajectory's return against its group's
// mean, optionally scaled by the group's spread; per-turn discounted returns as
// an option; groups where every trajectory scored the same optionally dropped
// (they carry no signal).
import { type Trajectory, type TrajectoryGroup, totalReward } from "../rollout/trajectory.ts";

export interface AdvantageOptions {
  /** Subtract the group's mean return (default true). */
  centre?: boolean;
  /** Divide by the group's standard deviation (default false). */
  scaleByStd?: boolean;
  /** Drop groups whose returns are all equal (default true). */
  dropConstantGroups?: boolean;
  /** Per-turn returns Σ_k≥t γ^(k−t)·r_k instead of one return per trajectory. */
  perTurnDiscount?: number;
  /**
   * Multiply advantages below zero by this (default 1). Below 1, what did worse
   * than its group is pushed down less than what did better is pushed up: a
   * pushed-down token's probability goes to every other token, the unlikely ones too.
   */
  negativeScale?: number;
}

export interface ScoredTrajectory {
  trajectory: Trajectory;
  /** One advantage per transition (turn). */
  turnAdvantages: number[];
}

function returnsToGo(t: Trajectory, gamma: number): number[] {
  const out = new Array<number>(t.transitions.length).fill(0);
  let running = 0;
  for (let i = t.transitions.length - 1; i >= 0; i--) {
    running = (t.transitions[i]?.reward ?? 0) + gamma * running;
    out[i] = running;
  }
  return out;
}

/** Failed trajectories are left out (they are recorded, never trained on). */
export function groupAdvantages(group: TrajectoryGroup, options: AdvantageOptions = {}): ScoredTrajectory[] {
  const negative = options.negativeScale ?? 1;
  if (!(Number.isFinite(negative) && negative >= 0))
    throw new RangeError(`advantages.negativeScale must be a finite number ≥ 0 (got ${negative})`);
  const ok = group.trajectories.filter((t) => !t.failure);
  if (ok.length === 0) return [];
  const returns = ok.map(totalReward);
  const mean = returns.reduce((a, b) => a + b, 0) / returns.length;
  const std = Math.sqrt(returns.reduce((a, r) => a + (r - mean) ** 2, 0) / returns.length);
  if ((options.dropConstantGroups ?? true) && std === 0) return [];
  const baseline = (options.centre ?? true) ? mean : 0;
  const scale = options.scaleByStd && std > 0 ? 1 / (std + 1e-6) : 1;
  return ok.map((trajectory, i) => {
    const perTurn =
      options.perTurnDiscount === undefined
        ? trajectory.transitions.map(() => returns[i] as number)
        : returnsToGo(trajectory, options.perTurnDiscount);
    return {
      trajectory,
      turnAdvantages: perTurn.map((g) => {
        const a = (g - baseline) * scale;
        if (a >= 0) return a;
        return negative === 0 ? 0 : a * negative; // a plain 0, not −0
      }),
    };
  });
}
