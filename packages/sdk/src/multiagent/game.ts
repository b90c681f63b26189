// Turn-based games for the multi-agent coordinator (DESIGN.md C11). A game is
// pure data and functions over an immutable state, so one definition serves
// self-play, fixed-opponent evaluation and per-player policies alike.
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

/** mulberry32: small, seedable, good enough to pick moves reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
