// Rollout over the tiny real model: a job's signal is shared by every episode and
// every sample call in flight, and must stay one listener however many there are.
import { BASE_KEY, InProcessSamplingClient, type InProcessServiceClient } from "@opentinker/engine";
import { modelInputFromTokens } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Env, EnvGroupBuilder, StepResult } from "../env/types.ts";
import { tinyService } from "../testing/index.ts";
import { rolloutGroups } from "./rollout.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
});
afterAll(() => cleanup());

/** Two turns, so every episode waits on the signal again after its first step. */
class TwoTurns implements Env {
  private turn = 0;
  async initialObservation() {
    return { observation: modelInputFromTokens([10, 20, 30]), stop: { stop: [], maxTokens: 2 } };
  }
  async step(): Promise<StepResult> {
    this.turn++;
    if (this.turn === 2) return { reward: 1, done: true };
    return { reward: 0, done: false, nextObservation: modelInputFromTokens([10, 20, 30, 40]) };
  }
}

const groups = (count: number, size: number): EnvGroupBuilder[] =>
  Array.from({ length: count }, () => ({
    makeEnvs: async () => Array.from({ length: size }, () => new TwoTurns()),
  }));

describe("a rollout under a job's signal", () => {
  it("runs 32 episodes at once without a MaxListenersExceededWarning, and aborts them all", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const controller = new AbortController();
      const signal = AbortSignal.any([controller.signal]);
      const sampler = new InProcessSamplingClient(
        service.samplerFor("tiny"),
        BASE_KEY,
        service.base("tiny"),
        {
          signal,
        },
      );
      const done = await rolloutGroups(groups(4, 8), sampler, { policyVersion: 0, signal, seed: 1 });
      const trajectories = done.flatMap((g) => g.trajectories);
      expect(trajectories).toHaveLength(32);
      for (const t of trajectories) expect(t.failure).toBeUndefined();
      // The same signal, aborted mid-rollout, ends every episode with the reason.
      const aborting = rolloutGroups(groups(4, 8), sampler, { policyVersion: 0, signal, seed: 2 });
      setImmediate(() => controller.abort());
      const aborted = (await aborting).flatMap((g) => g.trajectories);
      expect(aborted.every((t) => t.failure !== undefined)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
