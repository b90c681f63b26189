// Rollout (C8): for each environment group, run every trajectory concurrently;
// send the current model input and stop condition to the sampling client; record
// the action tokens and their logprobs before the action reaches the environment.
// A whole window is bound to one policy version (C4).
import { type SamplingClient, type SamplingParamsInput, whenAborted } from "@opentinker/protocol";
import type { Env, EnvGroupBuilder } from "../env/types.ts";
import type { Trajectory, TrajectoryGroup, Transition } from "./trajectory.ts";

export interface RolloutOptions {
  /** Temperature, topP, … (stop and maxTokens come from the environment). */
  sampling?: Omit<SamplingParamsInput, "stop" | "maxTokens">;
  /** The version of the policy behind `sampler`. */
  policyVersion: number;
  /** A turn limit, so a misbehaving environment cannot loop forever. */
  maxTurns?: number;
  /** Makes the window reproducible: every episode gets its own seed derived from it. */
  seed?: number;
  /** Ends every episode at once (each fails with the reason): a cancelled or draining run. */
  signal?: AbortSignal;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * `work`, or a rejection as soon as `signal` aborts (the work itself is left to
 * settle). Every episode waits on the same signal: `whenAborted` keeps that one listener.
 */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(new Error("the rollout was aborted"));
  return new Promise<T>((resolve, reject) => {
    const release = whenAborted(signal, () => reject(new Error("the rollout was aborted")));
    work.then(resolve, reject).finally(release);
  });
}

/** One episode. Failures end it with a reason instead of throwing. */
export async function rolloutEnv(
  env: Env,
  sampler: SamplingClient,
  options: RolloutOptions,
): Promise<Trajectory> {
  const transitions: Transition[] = [];
  const trajectory: Trajectory = { transitions, policyVersion: options.policyVersion };
  const { signal } = options;
  try {
    let { observation, stop } = await abortable(env.initialObservation(), signal);
    for (let turn = 0; turn < (options.maxTurns ?? 64); turn++) {
      const future = await sampler.sample(observation, 1, {
        ...options.sampling,
        stop: stop.stop,
        maxTokens: stop.maxTokens,
        ...(options.seed === undefined ? {} : { seed: (options.seed + turn * 7919) >>> 0 }),
      });
      const response = await abortable(future.result(), signal);
      const sequence = response.sequences[0];
      if (!sequence) throw new Error("the sampler returned no sequence");
      // Recorded now, before the environment can see (or change) the action.
      const actionTokens = [...sequence.tokens];
      const actionLogprobs = [...sequence.logprobs];
      const result = await abortable(env.step([...sequence.tokens]), signal);
      if (!Number.isFinite(result.reward))
        throw new Error(`the environment returned reward ${result.reward}`);
      transitions.push({
        observation,
        actionTokens,
        actionLogprobs,
        reward: result.reward,
        done: result.done,
        metrics: result.metrics ?? {},
      });
      if (result.done) return trajectory;
      if (!result.nextObservation)
        throw new Error("the environment returned no next observation before it was done");
      observation = result.nextObservation;
      stop = result.nextStop ?? stop;
    }
    throw new Error(`the episode did not end within ${options.maxTurns ?? 64} turns`);
  } catch (error) {
    trajectory.failure = message(error);
    return trajectory;
  }
}

/** Every environment of every group, concurrently. */
export async function rolloutGroups(
  builders: EnvGroupBuilder[],
  sampler: SamplingClient,
  options: RolloutOptions,
): Promise<TrajectoryGroup[]> {
  return Promise.all(
    builders.map(async (builder, g) => {
      const envs = await builder.makeEnvs();
      const seeded = (i: number) =>
        options.seed === undefined
          ? options
          : { ...options, seed: (options.seed + g * 100_003 + i * 1009) >>> 0 };
      const trajectories = await Promise.all(envs.map((env, i) => rolloutEnv(env, sampler, seeded(i))));
      return { trajectories, ...(builder.tag ? { tag: builder.tag } : {}) };
    }),
  );
}
