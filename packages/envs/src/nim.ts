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
 * Clearly worse than a loss (−1). At −1 a player in a lost position was
 * indifferent to forfeiting, and self-play drifted to ending half its games on
 * an illegal move. At −1.5 illegal moves stayed at 2–3 % of self-play games
 * and rose against the random player (docs/results.md, nim), some of them a
 * '4', never legal, next to the winning '3': the few illegal games pushed back
 * too weakly.
 */
export const NIM_ILLEGAL_PENALTY = -3;

/**
 * Self-play games start from piles of 1 to 10, not only the 7 to 10 that
 * validation and the corpus play: a good self-play opponent seldom leaves a
 * pile of 1–3, where most illegal moves against the random player were made
 * (3 or more from a pile of 2 or 3), so those positions stay in training.
 */
export const NIM_SELF_PLAY_PILES = { minStones: 1, maxStones: 10 } as const;

export function nimSelfPlayDataset(o: NimDatasetOptions): RlDataset {
  const game = nimGame({ lenient: o.lenient ?? false, ...NIM_SELF_PLAY_PILES });
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
