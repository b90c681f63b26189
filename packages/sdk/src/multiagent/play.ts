// Ways to run games (C11), all over the same Coordinator and PlayerEnv:
// self-play groups for trainRl (every seat an Env sharing the one policy the
// loop samples from), fixed-opponent groups and games (only the learner's seats
// are Envs, so only the learner's trajectories exist), and per-player policies
// (each seat routed to its own SamplingClient, or to a fixed opponent).
import type { SamplingClient, SamplingParamsInput } from "@opentinker/protocol";
import type { EnvGroupBuilder, RlDataset } from "../env/types.ts";
import { rolloutEnv } from "../rollout/rollout.ts";
import type { Trajectory } from "../rollout/trajectory.ts";
import { Coordinator, type CoordinatorOptions, type GameOutcome, PlayerEnv } from "./coordinator.ts";
import type { Opponent, TurnBasedGame } from "./game.ts";

export interface GroupOptions {
  /** Games per group (default 1). */
  games?: number;
  /** Game g of the group starts from `game.initial(seed + g)` (default 0). */
  seed?: number;
  illegalPenalty?: number;
  turnTimeoutMs?: number;
}

type SharedOptions<State, Move> = Omit<CoordinatorOptions<State, Move>, "seed" | "opponents">;

function coordinatorOptions<State, Move>(options: GroupOptions): SharedOptions<State, Move> {
  return {
    ...(options.illegalPenalty === undefined ? {} : { illegalPenalty: options.illegalPenalty }),
    ...(options.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: options.turnTimeoutMs }),
  };
}

/** Every player of `games` games, as Envs: trainRl samples all seats from its one policy. */
export function selfPlayGroup<State, Move>(
  game: TurnBasedGame<State, Move>,
  options: GroupOptions = {},
): EnvGroupBuilder {
  return {
    tag: `selfplay/${game.name}`,
    makeEnvs: async () =>
      Array.from({ length: options.games ?? 1 }, (_, g) => {
        const coordinator = new Coordinator(game, {
          ...coordinatorOptions<State, Move>(options),
          seed: (options.seed ?? 0) + g,
        });
        return Array.from({ length: game.players }, (_, p) => new PlayerEnv(coordinator, p));
      }).flat(),
  };
}

/** Opponent seats for every player but the learner. */
function opponentSeats<State, Move>(
  game: TurnBasedGame<State, Move>,
  learner: number,
  opponent: Opponent<State, Move>,
) {
  return new Map(
    Array.from({ length: game.players }, (_, p) => p)
      .filter((p) => p !== learner)
      .map((p) => [p, opponent] as const),
  );
}

/** The learner's seat of `games` games against a fixed opponent: one Env (one trajectory) per game. */
export function vsOpponentGroup<State, Move>(
  game: TurnBasedGame<State, Move>,
  opponent: Opponent<State, Move>,
  options: GroupOptions & { learner?: number } = {},
): EnvGroupBuilder {
  const learner = options.learner ?? 0;
  return {
    tag: `vs-opponent/${game.name}`,
    makeEnvs: async () =>
      Array.from({ length: options.games ?? 1 }, (_, g) => {
        const coordinator = new Coordinator(game, {
          ...coordinatorOptions<State, Move>(options),
          seed: (options.seed ?? 0) + g,
          opponents: opponentSeats(game, learner, opponent),
        });
        return new PlayerEnv(coordinator, learner);
      }),
  };
}

/** `batches` batches of `groups` groups; every group gets its own seeds. */
export function gameDataset(
  batches: number,
  groups: number,
  makeGroup: (seed: number) => EnvGroupBuilder,
): RlDataset {
  return {
    batches,
    batch: (b) => Array.from({ length: groups }, (_, g) => makeGroup((b * groups + g) * 7919)),
  };
}

/** A seat played by a sampling client, as rolloutEnv would play it. */
export interface PolicySeat {
  sampler: SamplingClient;
  policyVersion: number;
  sampling?: Omit<SamplingParamsInput, "stop" | "maxTokens">;
  seed?: number;
}

export type Seat<State, Move> = PolicySeat | Opponent<State, Move>;

export interface PlayedGame {
  /** By player index; undefined for fixed-opponent seats. */
  trajectories: (Trajectory | undefined)[];
  /** Null when the game was aborted (a policy seat's rollout failed). */
  outcome: GameOutcome | null;
}

/** Routes each player index to its own policy or fixed opponent and plays one game. */
export async function playGame<State, Move>(
  game: TurnBasedGame<State, Move>,
  seats: readonly Seat<State, Move>[],
  options: Omit<GroupOptions, "games"> = {},
): Promise<PlayedGame> {
  if (seats.length !== game.players) throw new Error(`${game.name} needs ${game.players} seats`);
  const opponents = new Map<number, Opponent<State, Move>>();
  seats.forEach((seat, p) => {
    if (typeof seat === "function") opponents.set(p, seat);
  });
  const coordinator = new Coordinator(game, {
    ...coordinatorOptions<State, Move>(options),
    seed: options.seed ?? 0,
    opponents,
  });
  const trajectories = await Promise.all(
    seats.map(async (seat, p) => (typeof seat === "function" ? undefined : playSeat(coordinator, p, seat))),
  );
  return { trajectories, outcome: coordinator.outcome };
}

async function playSeat<State, Move>(
  coordinator: Coordinator<State, Move>,
  player: number,
  seat: PolicySeat,
) {
  const trajectory = await rolloutEnv(new PlayerEnv(coordinator, player), seat.sampler, {
    policyVersion: seat.policyVersion,
    ...(seat.sampling ? { sampling: seat.sampling } : {}),
    ...(seat.seed === undefined ? {} : { seed: seat.seed }),
  });
  // The others would wait for this player forever: end the game for them now.
  if (trajectory.failure && !coordinator.outcome)
    coordinator.abort(`player ${player}: ${trajectory.failure}`);
  return trajectory;
}

/** Fixed-opponent evaluation of one game: only the learner's trajectory is produced. */
export async function playAgainst<State, Move>(
  game: TurnBasedGame<State, Move>,
  learner: PolicySeat,
  opponent: Opponent<State, Move>,
  options: Omit<GroupOptions, "games"> & { learnerSeat?: number } = {},
): Promise<{ trajectory: Trajectory; outcome: GameOutcome | null }> {
  const learnerSeat = options.learnerSeat ?? 0;
  const seats = Array.from(
    { length: game.players },
    (_, p): Seat<State, Move> => (p === learnerSeat ? learner : opponent),
  );
  const played = await playGame(game, seats, options);
  const trajectory = played.trajectories[learnerSeat];
  if (!trajectory) throw new Error("the learner seat produced no trajectory");
  return { trajectory, outcome: played.outcome };
}
