// The nim corpus: positions from games between two uniformly random legal
// players, each rendered by the game exactly as a player sees it during RL
// ("Nim 9 take 1-3 P0:", raw bytes) and followed by the mover's digit. The
// pretrained model plays legal moves but no strategy (it wins about half its
// games against a random player); leaving a multiple of four is left to RL.
import { nimGame, nimMoveToken } from "@opentinker/sdk";
import type { Example } from "./episodes.ts";

export interface NimCorpusOptions {
  games: number;
}

export function nimCorpus(random: () => number, o: NimCorpusOptions): Example[] {
  const game = nimGame();
  const out: Example[] = [];
  for (let g = 0; g < o.games; g++) {
    let state = game.initial(Math.floor(random() * 1_000_000));
    while (!game.terminal(state)) {
      const moves = game.legalMoves(state);
      const move = moves[Math.floor(random() * moves.length)] as number;
      const seen = game.render(state, game.currentPlayer(state));
      out.push({ tokens: [...seen, nimMoveToken(move)], weights: [...seen.map(() => 0), 1] });
      state = game.apply(state, move);
    }
  }
  return out;
}
