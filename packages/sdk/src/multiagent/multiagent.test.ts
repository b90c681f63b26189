import type { InProcessServiceClient } from "@opentinker/engine";
import { modelInputTokens, type SamplingClient } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemorySink } from "../metrics/sink.ts";
import { trainRl } from "../rl/train.ts";
import { rolloutEnv, rolloutGroups } from "../rollout/rollout.ts";
import { type Trajectory, totalReward } from "../rollout/trajectory.ts";
import { tinyService } from "../testing/index.ts";
import { Coordinator, PlayerEnv } from "./coordinator.ts";
import { randomPlayer } from "./game.ts";
import { type NimState, nimGame, nimMoveToken, optimalNimPlayer } from "./nim.ts";
import { gameDataset, playAgainst, playGame, selfPlayGroup, vsOpponentGroup } from "./play.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
});
afterAll(() => cleanup());

const text = (tokens: number[]) => String.fromCharCode(...tokens);
const obsText = (o: { observation: Parameters<typeof modelInputTokens>[0] }) =>
  text(modelInputTokens(o.observation));

/** True while a promise has not settled (checked after pending callbacks have run). */
async function pending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol();
  const winner = await Promise.race([
    promise.catch(() => undefined),
    new Promise((r) => setImmediate(() => r(marker))),
  ]);
  return winner === marker;
}

async function policy(seed: number) {
  const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2, seed });
  const saved = await (await tc.saveWeightsForSampler(`ma-${seed}`)).result();
  return { sampler: await tc.createSamplingClient(saved.handle), policyVersion: saved.version };
}

describe("the coordinator, driven move by move", () => {
  it("only the current player's environment advances; each player's reward lands on its own step", async () => {
    const c = new Coordinator(nimGame({ minStones: 7, maxStones: 7 }));
    const [a, b] = [new PlayerEnv(c, 0), new PlayerEnv(c, 1)];
    expect(obsText(await a.initialObservation())).toBe("Nim 7 take 1-3 P0:");
    const bFirst = b.initialObservation();
    expect(await pending(bFirst)).toBe(true);
    expect(() => c.submit(1, [nimMoveToken(1)])).toThrow(/out of turn/);

    const aStep1 = a.step([nimMoveToken(2)]);
    expect(obsText(await bFirst)).toBe("Nim 5 take 1-3 P1:");
    expect(await pending(aStep1)).toBe(true); // A waits while B thinks
    expect([a.steps, b.steps, c.movesBy(0), c.movesBy(1)]).toEqual([1, 0, 1, 0]);

    const bStep1 = b.step([nimMoveToken(1)]);
    const a1 = await aStep1;
    expect(a1.done).toBe(false);
    expect(text(modelInputTokens(a1.nextObservation ?? { chunks: [] }))).toBe("Nim 4 take 1-3 P0:");
    expect(await pending(bStep1)).toBe(true);

    const aStep2 = a.step([nimMoveToken(1)]); // leaves 3: B takes all and wins
    expect((await bStep1).done).toBe(false);
    const bStep2 = await b.step([nimMoveToken(3)]);
    expect(bStep2).toMatchObject({ reward: 1, done: true });
    expect(await aStep2).toMatchObject({ reward: -1, done: true });
    expect(c.outcome).toEqual({ rewards: [-1, 1], illegalBy: null, moves: 4 });
    expect([a.steps, b.steps]).toEqual([2, 2]);
  });

  it("an illegal move ends the game: the mover is penalised, a player who never moved gets no episode", async () => {
    const c = new Coordinator(nimGame({ minStones: 2, maxStones: 2 }), { illegalPenalty: -2 });
    const [a, b] = [new PlayerEnv(c, 0), new PlayerEnv(c, 1)];
    await a.initialObservation();
    const bFirst = b.initialObservation();
    expect(await a.step([nimMoveToken(3)])).toMatchObject({
      reward: -2,
      done: true,
      metrics: { "game/illegal_move": 1 },
    });
    await expect(bFirst).rejects.toThrow(/ended before player 1's first turn/);
    expect(c.outcome).toEqual({ rewards: [-2, 0], illegalBy: 0, moves: 1 });
    expect(c.currentPlayer).toBeNull();
    expect(() => c.submit(1, [nimMoveToken(1)])).toThrow(/out of turn/);
  });

  it("strict rules reject non-digits and multi-token actions; lenient rules map any token to a move", () => {
    const strict = nimGame();
    const lenient = nimGame({ lenient: true });
    const s: NimState = { stones: 2, toMove: 0, lastMover: null };
    expect(strict.legalAction(s, [nimMoveToken(2)])).toBe(2);
    expect(strict.legalAction(s, [120])).toBeNull();
    expect(strict.legalAction(s, [nimMoveToken(1), nimMoveToken(1)])).toBeNull();
    expect(lenient.legalAction(s, [nimMoveToken(3)])).toBe(2);
    expect(lenient.legalAction(s, [120])).toBe(1); // 120 mod 3 + 1
  });

  it("an aborted game fails the waiting players instead of hanging", async () => {
    const c = new Coordinator(nimGame(), { turnTimeoutMs: 20 });
    const b = new PlayerEnv(c, 1);
    await expect(b.initialObservation()).rejects.toThrow(/aborted: player 1 waited 20 ms/);
  });

  it("the optimal player never loses a won position, against a random player, on either seat", async () => {
    const game = nimGame({ minStones: 5, maxStones: 30 });
    for (let seed = 0; seed < 60; seed++) {
      const stones = game.initial(seed).stones;
      const optimalFirst = seed % 2 === 0;
      const random = randomPlayer(game, seed);
      const seats = optimalFirst ? [optimalNimPlayer(), random] : [random, optimalNimPlayer()];
      const { outcome } = await playGame(game, seats, { seed });
      const optimalSeat = optimalFirst ? 0 : 1;
      // Moving first wins iff the pile is not a multiple of 4; moving second, iff it is.
      const won = optimalFirst ? stones % 4 !== 0 : stones % 4 === 0;
      if (won) expect(outcome?.rewards[optimalSeat], `seed ${seed}`).toBe(1);
    }
  });
});

/** Alternation and attribution: each trajectory is exactly its player's moves, in the game's order. */
function expectMatchesHistory(c: Coordinator<NimState, number>, trajectories: Trajectory[]) {
  expect(c.history.map((r) => r.player)).toEqual(c.history.map((_, i) => i % 2));
  trajectories.forEach((t, p) => {
    const mine = c.history.filter((r) => r.player === p);
    expect(t.transitions.map((tr) => modelInputTokens(tr.observation))).toEqual(
      mine.map((r) => c.game.render(r.before, p)),
    );
    expect(t.transitions.map((tr) => tr.actionTokens)).toEqual(mine.map((r) => r.tokens));
    // Only the last transition carries a reward: this player's own outcome.
    expect(t.transitions.slice(0, -1).every((tr) => tr.reward === 0)).toBe(true);
    expect(totalReward(t)).toBe(c.outcome?.rewards[p]);
  });
}

describe("self-play with the tiny model", () => {
  it("both seats sample one policy; rewards land on each player's own trajectory, turns alternate", async () => {
    const { sampler, policyVersion } = await policy(1);
    const envs = (await selfPlayGroup(nimGame({ lenient: true }), {
      games: 3,
      seed: 4,
    }).makeEnvs()) as PlayerEnv<NimState, number>[];
    expect(envs.map((e) => e.player)).toEqual([0, 1, 0, 1, 0, 1]);
    const trajectories = await Promise.all(
      envs.map((env, i) => rolloutEnv(env, sampler, { policyVersion, seed: 100 + i })),
    );
    for (let g = 0; g < 3; g++) {
      const pair = trajectories.slice(2 * g, 2 * g + 2);
      const c = (envs[2 * g] as PlayerEnv<NimState, number>).coordinator;
      expect(pair.map((t) => t.failure)).toEqual([undefined, undefined]);
      expect(pair.map(totalReward).sort()).toEqual([-1, 1]); // zero-sum, one winner
      expectMatchesHistory(c, pair);
      expect(pair.map((t) => t.transitions.length)).toEqual([envs[2 * g]?.steps, envs[2 * g + 1]?.steps]);
    }
  });

  it("under strict rules the untrained model's illegal moves end games with the mover's penalty", async () => {
    const seat = await policy(2);
    const game = nimGame();
    let illegal = 0;
    for (let seed = 0; seed < 4; seed++) {
      const { trajectories, outcome } = await playGame(
        game,
        [
          { ...seat, seed: seed * 2 },
          { ...seat, seed: seed * 2 + 1 },
        ],
        { seed },
      );
      if (outcome?.illegalBy === null || outcome === null) continue;
      illegal++;
      const mover = trajectories[outcome.illegalBy] as Trajectory;
      expect(mover.transitions.at(-1)).toMatchObject({
        reward: -1,
        done: true,
        metrics: { "game/illegal_move": 1 },
      });
      const other = trajectories[1 - outcome.illegalBy] as Trajectory;
      if (!other.failure) expect(totalReward(other)).toBe(0);
    }
    expect(illegal).toBeGreaterThan(0);
  });

  it("distinct policies per player: each seat samples only its own client", async () => {
    // Fresh LoRA adapters start equal to the base model, so the samplers are told
    // apart by counting their calls and by their version labels.
    const calls = [0, 0];
    const seats = await Promise.all(
      [3, 4].map(async (seed, p) => {
        const { sampler } = await policy(seed);
        const counted: SamplingClient = {
          policy: sampler.policy,
          sample: (...args) => {
            calls[p] = (calls[p] ?? 0) + 1;
            return sampler.sample(...args);
          },
          computeLogprobs: (input) => sampler.computeLogprobs(input),
          getTokenizer: () => sampler.getTokenizer(),
        };
        return { sampler: counted, policyVersion: 10 * (p + 1), seed };
      }),
    );
    const { trajectories, outcome } = await playGame(nimGame({ lenient: true }), seats, { seed: 1 });
    expect(outcome?.illegalBy).toBeNull();
    expect(trajectories.map((t) => t?.policyVersion)).toEqual([10, 20]);
    expect(trajectories.map((t) => t?.transitions.length)).toEqual(calls);
    expect(calls.reduce((a, b) => a + b)).toBe(outcome?.moves);
  });
});

describe("fixed-opponent evaluation", () => {
  it("only the learner's trajectories are produced, and the optimal player wins every won position", async () => {
    const { sampler, policyVersion } = await policy(5);
    const game = nimGame({ lenient: true });
    const builder = vsOpponentGroup(game, optimalNimPlayer(), { games: 4, seed: 0, learner: 1 });
    const [group] = await rolloutGroups([builder], sampler, { policyVersion, seed: 9 });
    expect(group?.trajectories).toHaveLength(4);
    group?.trajectories.forEach((t, g) => {
      expect(t.failure).toBeUndefined();
      // The optimal player moves first; from 7, 9 and 10 stones it has a win.
      if (game.initial(g).stones % 4 !== 0) expect(totalReward(t)).toBe(-1);
    });
  });

  it("playAgainst: the learner moving first from a multiple of 4 always loses to the optimal player", async () => {
    const learner = { ...(await policy(6)), seed: 3 };
    const game = nimGame({ lenient: true, minStones: 8, maxStones: 8 });
    const { trajectory, outcome } = await playAgainst(game, learner, optimalNimPlayer());
    expect(trajectory.failure).toBeUndefined();
    expect(totalReward(trajectory)).toBe(-1);
    expect(outcome?.rewards).toEqual([-1, 1]);
  });
});

describe("training on self-play", () => {
  it("self-play groups train with trainRl unchanged and publish a new version", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2, seed: 8 });
    const sink = new MemorySink();
    await trainRl({
      trainingClient: tc,
      dataset: gameDataset(1, 2, (seed) => selfPlayGroup(nimGame({ lenient: true }), { games: 2, seed })),
      lossFn: "importance_sampling",
      sink,
      seed: 5,
    });
    const record = sink.records[0];
    expect(record?.["trajectories/failed"]).toBe(0);
    expect(record?.["datums/count"]).toBeGreaterThan(0);
    expect(record?.["policy/version"]).toBe(2);
  });
});
