// `nim`: two agents, turn-based, through the SDK's coordinator (C11): self-play
// groups for training, and evaluation against a fixed random or optimal player.
import {
  type EnvGroupBuilder,
  nimGame,
  optimalNimPlayer,
  type RlDataset,
  randomPlayer,
  selfPlayGroup,
  vsOpponentGroup,
} from "@opentinker/sdk";

export interface NimDatasetOptions {
  seed: number;
  batches: number;
  groupsPerBatch: number;
  /** Games per group. */
  games: number;
  /** Accept any token as a move (for untrained models that rarely emit digits). */
  lenient?: boolean;
  /** The mover's reward for an illegal move (default NIM_ILLEGAL_PENALTY). */
  illegalPenalty?: number;
}

/**
 * Worse than a loss (−1): were it equal, a player in a lost position would be
 * indifferent to forfeiting, and self-play drifted to ending half its games on
 * an illegal move.
 */
export const NIM_ILLEGAL_PENALTY = -1.5;

export function nimSelfPlayDataset(o: NimDatasetOptions): RlDataset {
  const game = nimGame({ lenient: o.lenient ?? false });
  return {
    batches: o.batches,
    batch: (index: number): EnvGroupBuilder[] =>
      Array.from({ length: o.groupsPerBatch }, (_, g) =>
        selfPlayGroup(game, {
          games: o.games,
          seed: o.seed * 1_000_003 + index * 101 + g,
          illegalPenalty: o.illegalPenalty ?? NIM_ILLEGAL_PENALTY,
        }),
      ),
  };
}

/** Evaluation: the learner against a random or the optimal player; only the learner's trajectories. */
export function nimEvaluationDataset(o: NimDatasetOptions & { opponent: "random" | "optimal" }): RlDataset {
  const game = nimGame({ lenient: o.lenient ?? false });
  const opponent = o.opponent === "optimal" ? optimalNimPlayer(3) : randomPlayer(game, o.seed);
  return {
    batches: o.batches,
    batch: (index: number): EnvGroupBuilder[] =>
      Array.from({ length: o.groupsPerBatch }, (_, g) =>
        vsOpponentGroup(game, opponent, {
          games: o.games,
          seed: o.seed * 1_000_003 + index * 101 + g,
          illegalPenalty: o.illegalPenalty ?? NIM_ILLEGAL_PENALTY,
        }),
      ),
  };
}
