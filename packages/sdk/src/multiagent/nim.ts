// Nim with one pile, "take 1 to maxTake", normal play (whoever takes the last
// stone wins). Small enough that an optimal player is one line, which makes it
// a check on the coordinator: the optimal player never loses a won position.
import type { Opponent, TurnBasedGame } from "./game.ts";

export interface NimState {
  readonly stones: number;
  readonly toMove: number;
  /** Who took the last stone (the winner once stones = 0). */
  readonly lastMover: number | null;
}

export interface NimOptions {
  /** The pile is drawn from [minStones, maxStones] by the seed (defaults 7 and 10). */
  minStones?: number;
  maxStones?: number;
  /** Default 3. At most 9, since a move is one digit. */
  maxTake?: number;
  /**
   * When true, any token is a move (a digit means itself, any other token t
   * means (t mod maxTake) + 1, both capped at the pile). An untrained model then
   * plays whole games; leave it false to make non-digits illegal.
   */
  lenient?: boolean;
}

/** ASCII '0' in the byte-level tokenizers (byte tokens keep their byte value). */
const DIGIT_ZERO = 48;

const bytes = (text: string): number[] => [...new TextEncoder().encode(text)];

function parseTake(state: NimState, tokens: readonly number[], maxTake: number, lenient: boolean) {
  const [token] = tokens;
  if (token === undefined || (!lenient && tokens.length !== 1)) return null;
  const digit = token - DIGIT_ZERO;
  if (digit >= 1 && digit <= maxTake) return lenient ? Math.min(digit, state.stones) : digit;
  return lenient ? Math.min((token % maxTake) + 1, state.stones) : null;
}

export function nimGame(options: NimOptions = {}): TurnBasedGame<NimState, number> {
  const min = options.minStones ?? 7;
  const max = options.maxStones ?? 10;
  const maxTake = options.maxTake ?? 3;
  if (min < 1 || max < min || maxTake < 1 || maxTake > 9) throw new RangeError("nimGame: bad options");
  const lenient = options.lenient ?? false;
  return {
    name: "nim",
    players: 2,
    stop: { stop: [], maxTokens: 1 },
    initial: (seed) => ({ stones: min + (Math.abs(seed) % (max - min + 1)), toMove: 0, lastMover: null }),
    currentPlayer: (state) => state.toMove,
    render: (state, player) => bytes(`Nim ${state.stones} take 1-${maxTake} P${player}:`),
    legalAction(state, tokens) {
      const take = parseTake(state, tokens, maxTake, lenient);
      return take !== null && take <= state.stones ? take : null;
    },
    legalMoves: (state) => Array.from({ length: Math.min(maxTake, state.stones) }, (_, i) => i + 1),
    apply: (state, take) => ({
      stones: state.stones - take,
      toMove: 1 - state.toMove,
      lastMover: state.toMove,
    }),
    terminal(state) {
      if (state.stones > 0 || state.lastMover === null) return null;
      return [0, 1].map((p) => (p === state.lastMover ? 1 : -1));
    },
  };
}

/** The digit token that plays `take` (for tests and scripted players). */
export const nimMoveToken = (take: number): number => DIGIT_ZERO + take;

/**
 * Leaves a multiple of maxTake + 1 whenever it can (then it wins); from a
 * losing position it takes one stone and hopes.
 */
export function optimalNimPlayer(maxTake = 3): Opponent<NimState, number> {
  return (state) => {
    const winning = state.stones % (maxTake + 1);
    return winning === 0 ? 1 : winning;
  };
}
