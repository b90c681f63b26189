// The RL settings each built-in environment learns with, as docs/results.md
// measured them (`npm run experiment -- <env>-lora-rl`). One home: the
// experiment runner's settings (packages/models) are made of these numbers and
// the dashboard's job form starts from them, so a job created with the form's
// defaults runs what was measured.
import type { BuiltinEnvironment } from "./environments.ts";
import type { RlJobConfigInput } from "./jobs.ts";

/** What a preset sets of an RL job's config (the rest keeps the schema's defaults). */
export type RlPresetConfig = Required<
  Pick<
    RlJobConfigInput,
    "steps" | "groupsPerStep" | "groupSize" | "lossFn" | "lrSchedule" | "sampling" | "referenceKl"
  >
> & {
  adam: { learningRate: number; gradClipNorm: number };
  validation: { every: number; groups: number; groupSize: number };
};

export interface RlPreset {
  config: RlPresetConfig;
  /**
   * The validation metric that tells whether it learns, without its `val/`
   * prefix: the figure docs/results.md reports and the one a job's `best`
   * version is chosen by.
   */
  metric: string;
}

/** Validation every quarter of the run, as the experiment runner does. */
const quarterly = (steps: number, groups: number, groupSize: number) => ({
  every: steps / 4,
  groups,
  groupSize,
});

export const RL_PRESETS: Readonly<Record<BuiltinEnvironment, RlPreset>> = {
  // 16 problems × 8 attempts; validation on 128 held-out problems once each.
  arithmetic: {
    config: {
      steps: 800,
      groupsPerStep: 16,
      groupSize: 8,
      lossFn: "ppo",
      adam: { learningRate: 1e-3, gradClipNorm: 0 },
      lrSchedule: "constant",
      sampling: {},
      // Without it RL raised malformed answers on held-out problems on one seed in
      // three: a KL to the base at every position holds the stray tokens' chance
      // down (docs/results.md; chosen on development seeds 4 and 5).
      referenceKl: 0.2,
      validation: quarterly(800, 128, 1),
    },
    metric: "reward/mean",
  },
  // 8 games × 8 attempts; validation on 64 games × 2 in the held-out range; success is finding the secret.
  "guess-number": {
    config: {
      steps: 600,
      groupsPerStep: 8,
      groupSize: 8,
      lossFn: "ppo",
      // Unclipped, gradient norms grew from ~10 to spikes of 100–400 and some runs
      // collapsed late (docs/results.md); a unit-norm clip keeps every step's size alike.
      adam: { learningRate: 1e-3, gradClipNorm: 1 },
      lrSchedule: "constant",
      sampling: {},
      // Without a KL malformed guesses rose on some seeds and machines; arithmetic's
      // 0.2 (and 0.05–0.3) stops its learning. A small one over twice the steps holds
      // them and still learns (docs/results.md; chosen on development seeds 4, 5, 6).
      referenceKl: 0.01,
      validation: quarterly(600, 64, 2),
    },
    metric: "env/found",
  },
  // 8 groups × 4 self-play games; validation on 16 × 8 games against the random player.
  nim: {
    config: {
      steps: 300,
      groupsPerStep: 8,
      groupSize: 4,
      lossFn: "ppo",
      adam: { learningRate: 1e-3, gradClipNorm: 0 },
      lrSchedule: "constant",
      sampling: {},
      // Arithmetic's KL, taken as it was chosen there: without it illegal moves rose
      // on one seed in six (docs/results.md).
      referenceKl: 0.2,
      validation: quarterly(300, 16, 8),
    },
    metric: "env/game/won",
  },
  // 4 pictures × 8 attempts; validation on 64 held-out pictures × 2 (needs a vision-language model).
  shapes: {
    config: {
      steps: 300,
      groupsPerStep: 4,
      groupSize: 8,
      lossFn: "ppo",
      adam: { learningRate: 1e-3, gradClipNorm: 0 },
      lrSchedule: "constant",
      sampling: {},
      // Arithmetic's KL, taken as it was chosen there: without it malformed answers
      // rose on one seed in three (docs/results.md).
      referenceKl: 0.2,
      validation: quarterly(300, 64, 2),
    },
    metric: "reward/mean",
  },
  // 16 problems × 8 attempts; validation on 128 held-out problems (half single-digit facts, half large) once each.
  // Success is the right final answer; the reward also pays for each call.
  calculator: {
    config: {
      steps: 300,
      groupsPerStep: 16,
      groupSize: 8,
      lossFn: "ppo",
      adam: { learningRate: 1e-3, gradClipNorm: 0 },
      lrSchedule: "constant",
      sampling: {},
      referenceKl: 0,
      validation: quarterly(300, 128, 1),
    },
    metric: "env/correct",
  },
};

/** The preset of a built-in environment's name, or undefined for any other (remote environments). */
export function rlPresetOf(builtin: string | null | undefined): RlPreset | undefined {
  return builtin && Object.hasOwn(RL_PRESETS, builtin)
    ? RL_PRESETS[builtin as BuiltinEnvironment]
    : undefined;
}

/** The validation metric a job's `best` version is chosen by (higher is better): its environment's, else the mean reward. */
export const bestMetricOf = (builtin: string | null | undefined): string =>
  `val/${rlPresetOf(builtin)?.metric ?? "reward/mean"}`;
