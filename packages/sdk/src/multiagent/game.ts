// Turn-based games for the multi-agent coordinator (DESIGN.md C11). A game is
// pure data and functions over an immutable state, so one definition serves
// self-play, fixed-opponent evaluation and per-player policies alike.
import { seededRandom } from "@opentinker/protocol";
import type { StopCondition } from "../env/types.ts";

export interface TurnBasedGame<State, Move> {
  /** For tags and metrics. */
  readonly name: string;
  readonly players: number;
  /** The stop condition of every turn's generation (e.g. one token for a digit move). */
  readonly stop: StopCondition;
  initial(seed: number): State;
  /** Whose turn it is; only meaningful while `terminal(state)` is null. */
  currentPlayer(state: State): number;
  /** The observation tokens `player` sees in this state. */
  render(state: State, player: number): number[];
  /** The move these generated tokens stand for, or null when they are not a legal move. */
  legalAction(state: State, tokens: readonly number[]): Move | null;
  /** Every legal move (random and scripted opponents pick from these). */
  legalMoves(state: State): Move[];
  apply(state: State, move: Move): State;
  /** Null while the game goes on; otherwise one reward per player. */
  terminal(state: State): number[] | null;
}

/** A non-learning player: picks a move for the current player of a non-terminal state. */
export type Opponent<State, Move> = (state: State) => Move;

/** The seeded PRNG that picks moves reproducibly (one home: protocol's random.ts). */
export { seededRandom } from "@opentinker/protocol";

/** Plays a uniformly random legal move (reproducible from `seed`). */
export function randomPlayer<State, Move>(game: TurnBasedGame<State, Move>, seed = 0): Opponent<State, Move> {
  const random = seededRandom(seed);
  return (state) => {
    const moves = game.legalMoves(state);
    const move = moves[Math.floor(random() * moves.length)];
    if (move === undefined) throw new Error(`${game.name}: no legal move in a non-terminal state`);
    return move;
  };
}
