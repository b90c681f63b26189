// The coordinator (C11): one shared game state, whose turn it is, the current
// player's observation, and applying that player's move. Each player sees the
// game through its own Env (so the ordinary rolloutEnv drives it); a player's
// step submits its move and then waits, on a promise, until its turn comes back
// or the game ends. Seats held by a fixed opponent are played inline.
import { type ModelInput, modelInputFromTokens } from "@opentinker/protocol";
import type { Env, StepResult, StopCondition } from "../env/types.ts";
import type { Opponent, TurnBasedGame } from "./game.ts";

export interface GameOutcome {
  /** One reward per player. */
  rewards: number[];
  /** The player whose illegal move ended the game, if one did. */
  illegalBy: number | null;
  /** Moves applied, fixed opponents' included. */
  moves: number;
}

export interface MoveRecord<State, Move> {
  player: number;
  /** The state the player saw when it moved. */
  before: State;
  tokens: number[] | null;
  /** Null for an illegal move. */
  move: Move | null;
}

export interface CoordinatorOptions<State, Move> {
  seed?: number;
  /** Seats played by a non-learning function instead of an Env, by player index. */
  opponents?: ReadonlyMap<number, Opponent<State, Move>>;
  /**
   * An illegal move ends the game: the mover gets this reward (default -1) and
   * every other player 0, since nobody earned a win.
   */
  illegalPenalty?: number;
  /**
   * If a player waits this long for its turn, the game is aborted and every
   * waiting player's episode fails. A safety net for when another player's
   * rollout dies mid-game (a sampler error) and would otherwise never move.
   * Default 10 minutes.
   */
  turnTimeoutMs?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class Coordinator<State, Move> {
  readonly history: MoveRecord<State, Move>[] = [];
  private current: State;
  private ended: GameOutcome | null = null;
  private aborted: Error | null = null;
  private readonly waiters = new Map<number, Waiter>();
  private readonly opponents: ReadonlyMap<number, Opponent<State, Move>>;

  constructor(
    readonly game: TurnBasedGame<State, Move>,
    private readonly options: CoordinatorOptions<State, Move> = {},
  ) {
    this.current = game.initial(options.seed ?? 0);
    this.opponents = options.opponents ?? new Map();
    this.settle();
  }

  get state(): State {
    return this.current;
  }

  get outcome(): GameOutcome | null {
    return this.ended;
  }

  /** Whose turn it is, or null once the game is over. */
  get currentPlayer(): number | null {
    return this.ended || this.aborted ? null : this.game.currentPlayer(this.current);
  }

  /** Moves `player` has made so far. */
  movesBy(player: number): number {
    return this.history.filter((record) => record.player === player).length;
  }

  observation(player: number): number[] {
    return this.game.render(this.current, player);
  }

  /** Applies the current player's generated tokens; anything but a legal move ends the game. */
  submit(player: number, tokens: readonly number[]): void {
    if (this.aborted) throw this.aborted;
    if (this.currentPlayer !== player)
      throw new Error(`player ${player} moved out of turn (current: ${this.currentPlayer ?? "game over"})`);
    const move = this.game.legalAction(this.current, tokens);
    this.history.push({ player, before: this.current, tokens: [...tokens], move });
    if (move === null) this.endByIllegalMove(player);
    else this.current = this.game.apply(this.current, move);
    this.settle();
  }

  /** Resolves once it is `player`'s turn or the game is over; rejects if the game is aborted. */
  waitForTurn(player: number): Promise<void> {
    if (this.aborted) return Promise.reject(this.aborted);
    if (this.currentPlayer === null || this.currentPlayer === player) return Promise.resolve();
    if (this.waiters.has(player)) return Promise.reject(new Error(`player ${player} is already waiting`));
    return new Promise((resolve, reject) => {
      const ms = this.options.turnTimeoutMs ?? 600_000;
      const timer = setTimeout(() => this.abort(`player ${player} waited ${ms} ms for its turn`), ms);
      // A forgotten game must not keep the process alive.
      timer.unref();
      this.waiters.set(player, { resolve, reject, timer });
    });
  }

  /** Ends the game without an outcome: every waiting player's episode fails. */
  abort(reason: string): void {
    if (this.aborted || this.ended) return;
    this.aborted = new Error(`game aborted: ${reason}`);
    for (const [player, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      this.waiters.delete(player);
      waiter.reject(this.aborted);
    }
  }

  private endByIllegalMove(player: number): void {
    const rewards = Array.from({ length: this.game.players }, (_, p) =>
      p === player ? (this.options.illegalPenalty ?? -1) : 0,
    );
    this.ended = { rewards, illegalBy: player, moves: this.history.length };
  }

  /** Plays the fixed seats, checks for the end, then wakes whoever may now act. */
  private settle(): void {
    for (;;) {
      const rewards = this.ended ? null : this.game.terminal(this.current);
      if (rewards) this.ended = { rewards, illegalBy: null, moves: this.history.length };
      const player = this.currentPlayer;
      const opponent = player === null ? undefined : this.opponents.get(player);
      if (player === null || !opponent) break;
      const move = opponent(this.current);
      this.history.push({ player, before: this.current, tokens: null, move });
      this.current = this.game.apply(this.current, move);
    }
    this.wake();
  }

  private wake(): void {
    for (const [player, waiter] of this.waiters) {
      if (this.currentPlayer !== null && this.currentPlayer !== player) continue;
      clearTimeout(waiter.timer);
      this.waiters.delete(player);
      waiter.resolve();
    }
  }
}

/** One player's view of a shared game: the Env the ordinary rollout drives. */
export class PlayerEnv<State, Move> implements Env {
  /** Calls to step (this player's moves through this Env). */
  steps = 0;

  constructor(
    readonly coordinator: Coordinator<State, Move>,
    readonly player: number,
  ) {}

  async initialObservation(): Promise<{ observation: ModelInput; stop: StopCondition }> {
    await this.coordinator.waitForTurn(this.player);
    // No action of this player can earn the reward, so there is nothing to train on: fail the episode.
    if (this.coordinator.outcome) throw new Error(`the game ended before player ${this.player}'s first turn`);
    return { observation: this.observe(), stop: this.coordinator.game.stop };
  }

  async step(action: number[]): Promise<StepResult> {
    this.steps++;
    this.coordinator.submit(this.player, action);
    await this.coordinator.waitForTurn(this.player);
    const outcome = this.coordinator.outcome;
    if (!outcome) return { reward: 0, done: false, nextObservation: this.observe() };
    return {
      reward: outcome.rewards[this.player] ?? 0,
      done: true,
      metrics: {
        "game/won": (outcome.rewards[this.player] ?? 0) > 0 ? 1 : 0,
        "game/illegal_move": outcome.illegalBy === this.player ? 1 : 0,
        "game/moves": outcome.moves,
      },
    };
  }

  private observe(): ModelInput {
    return modelInputFromTokens(this.coordinator.observation(this.player));
  }
}
