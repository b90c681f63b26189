// The RL loop (C10): rollout with the current snapshot → group advantages →
// datums → forwardBackward → optimStep → saveWeightsForSampler → refresh the
// sampler at the sync point. Validation runs the same rollout with no loss and
// no optimizer. Written against the client interfaces, so it runs unchanged
// with in-process or remote clients.
import {
  type AdamParamsInput,
  type Datum,
  divergedAt,
  type LossFnConfig,
  type LrSchedule,
  lrMultiplier,
  type RlLossFn,
  type SamplingClient,
  type SamplingParamsInput,
  type TrainingClient,
  ZAdamParams,
} from "@opentinker/protocol";
import type { RlDataset } from "../env/types.ts";
import type { MetricsRecord, MetricsSink } from "../metrics/sink.ts";
import { rolloutGroups } from "../rollout/rollout.ts";
import { type Trajectory, type TrajectoryGroup, totalReward } from "../rollout/trajectory.ts";
import type { AdvantageOptions } from "./advantages.ts";
import type { DatumOptions } from "./datums.ts";
import { applyKlPenalty, type KlPenalty } from "./kl.ts";
import type { StalenessPolicy } from "./staleness.ts";
import { type StepTrajectory, scoreStep } from "./step-trajectories.ts";

export { applyStaleness, type StalenessPolicy } from "./staleness.ts";

/** One RL step as the loop ran it. */
export interface RlStep {
  step: number;
  groups: TrajectoryGroup[];
  record: MetricsRecord;
  /** Every trajectory of the step with the datums it was trained on (what a server stores). */
  trajectories: StepTrajectory[];
  /** The validation recorded with this step, if any, and the snapshot version it measured. */
  validated?: { version: number; metrics: MetricsRecord };
}

export interface TrainRlConfig {
  trainingClient: TrainingClient;
  dataset: RlDataset;
  lossFn: RlLossFn;
  lossFnConfig?: Partial<LossFnConfig>;
  adam?: AdamParamsInput;
  /** How the learning rate moves over the dataset's steps (default: held at `adam.learningRate`). */
  lrSchedule?: LrSchedule;
  sampling?: Omit<SamplingParamsInput, "stop" | "maxTokens">;
  advantages?: AdvantageOptions;
  datums?: DatumOptions;
  staleness?: StalenessPolicy;
  /**
   * Validation with no training: before the first step (recorded with step 0,
   * unless `baseline` is false or the run resumes later), after every `every`
   * steps, and after the last step (unless `final` is false), each once.
   */
  validation?: { dataset: RlDataset; every: number; baseline?: boolean; final?: boolean };
  sink?: MetricsSink;
  maxTurns?: number;
  /** Seeds every rollout window (the run is then reproducible). */
  seed?: number;
  /** Penalise divergence from a reference policy (folded into the advantages). */
  klPenalty?: KlPenalty;
  /**
   * A supervised loss mixed into each step's gradient (PPO-ptx): step `step`'s
   * datums, trained with cross_entropy before the same optimizer step. Their
   * weights carry the mix's strength; it holds the policy's language on inputs
   * RL does not sample. A step with no RL datums trains neither.
   */
  mixedIn?: (step: number) => Datum[];
  /** Save the training state (weights, AdamW moments, step) every this many steps. */
  checkpointEvery?: number;
  /** Resume at this step (the training client already holds the state it reached). */
  startStep?: number;
  /**
   * Called after each step with its rollouts, what they were trained on and its
   * metrics, and awaited, so a server can store them before the next step begins.
   */
  onStep?: (result: RlStep) => Promise<void>;
  /** Asked before each step; true ends the run early (cancelled, or the worker drains). */
  shouldStop?: () => boolean | Promise<boolean>;
  /**
   * Ends the run within the step in flight: its rollout is cut short and nothing
   * of that step is trained or stored (the run ends as if stopped before it).
   */
  signal?: AbortSignal;
}

export interface SyncedSampler {
  client: SamplingClient;
  version: number;
}

function rewardStats(groups: TrajectoryGroup[], prefix: string): MetricsRecord {
  const all = groups.flatMap((g) => g.trajectories);
  const ok = all.filter((t) => !t.failure).map(totalReward);
  const mean = ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : 0;
  const std = ok.length ? Math.sqrt(ok.reduce((a, r) => a + (r - mean) ** 2, 0) / ok.length) : 0;
  return {
    step: 0,
    [`${prefix}reward/mean`]: mean,
    [`${prefix}reward/std`]: std,
    [`${prefix}trajectories/failed`]: all.length - ok.length,
    ...envMetricMeans(all, prefix),
  };
}

/**
 * The environments' own per-episode metrics (a malformed flag, turns taken),
 * averaged over the trajectories that report each one, as `env/<name>`. An
 * episode's value is the last one its transitions report.
 */
export function envMetricMeans(trajectories: Trajectory[], prefix = ""): Record<string, number> {
  const sums = new Map<string, { total: number; count: number }>();
  for (const t of trajectories) {
    const episode: Record<string, number> = Object.assign({}, ...t.transitions.map((tr) => tr.metrics));
    for (const [key, value] of Object.entries(episode)) {
      if (!Number.isFinite(value)) continue;
      const s = sums.get(key) ?? { total: 0, count: 0 };
      s.total += value;
      s.count++;
      sums.set(key, s);
    }
  }
  const out: Record<string, number> = {};
  for (const [key, s] of sums) out[`${prefix}env/${key}`] = s.total / s.count;
  return out;
}

/** Runs a dataset's episodes with no loss and no optimizer step (validation or deployment). */
export async function evaluate(
  sampler: SyncedSampler,
  dataset: RlDataset,
  config: Pick<TrainRlConfig, "sampling" | "maxTurns" | "seed" | "signal">,
) {
  const groups: TrajectoryGroup[] = [];
  for (let b = 0; b < dataset.batches; b++) {
    groups.push(
      ...(await rolloutGroups(dataset.batch(b), sampler.client, {
        policyVersion: sampler.version,
        ...(config.seed === undefined ? {} : { seed: config.seed + b * 1_000_003 }),
        ...(config.sampling ? { sampling: config.sampling } : {}),
        ...(config.maxTurns ? { maxTurns: config.maxTurns } : {}),
        ...(config.signal ? { signal: config.signal } : {}),
      })),
    );
  }
  return { groups, metrics: rewardStats(groups, "val/") };
}

async function publish(tc: TrainingClient): Promise<SyncedSampler> {
  const saved = await (await tc.saveWeightsForSampler("rl")).result();
  return { client: await tc.createSamplingClient(saved.handle), version: saved.version };
}

/** The AdamW settings of step `step` (from 0): the config's, at the schedule's learning rate. */
export function adamAtStep(config: Pick<TrainRlConfig, "adam" | "lrSchedule">, step: number, steps: number) {
  if (!config.lrSchedule || config.lrSchedule === "constant") return config.adam;
  const peak = ZAdamParams.shape.learningRate.parse(config.adam?.learningRate);
  return { ...config.adam, learningRate: peak * lrMultiplier(config.lrSchedule, step, steps) };
}

/**
 * One training step on rollout groups: advantages, the staleness rule against
 * `trainerVersion`, datums, forwardBackward (and one on `mixed`, cross_entropy,
 * into the same gradient) and optimStep (with `adam`, by default the config's).
 * Returns the step's metrics, whether anything was trained, and every
 * trajectory with its datums.
 */
export async function trainOnGroups(
  config: TrainRlConfig,
  groups: TrajectoryGroup[],
  trainerVersion: number,
  adam: AdamParamsInput | undefined = config.adam,
  mixed: Datum[] = [],
): Promise<{ record: MetricsRecord; trained: boolean; trajectories: StepTrajectory[] }> {
  const tc = config.trainingClient;
  const record: MetricsRecord = { ...rewardStats(groups, "") };
  const scored = scoreStep(groups, trainerVersion, config);
  const { trajectories } = scored;
  const datums = trajectories.flatMap((t) => (t.trained ? t.datums : []));
  record["staleness/max"] = scored.maxStaleness;
  record["trajectories/dropped_stale"] = scored.dropped;
  record["datums/count"] = datums.length;
  if (datums.length === 0) return { record, trained: false, trajectories };
  if (config.klPenalty) record["kl/mean"] = await applyKlPenalty(datums, config.klPenalty);
  const fb = await tc.forwardBackward(datums, config.lossFn, config.lossFnConfig);
  const mix = mixed.length ? await tc.forwardBackward(mixed, "cross_entropy") : undefined;
  const opt = await tc.optimStep(adam);
  for (const [k, v] of Object.entries((await fb.result()).metrics)) record[k.replace(":", "/")] = v;
  for (const [k, v] of Object.entries((await mix?.result())?.metrics ?? {}))
    record[`mixed/${k.replace(":", "/")}`] = v;
  for (const [k, v] of Object.entries((await opt.result()).metrics)) record[k.replace(":", "/")] = v;
  return { record, trained: true, trajectories };
}

/**
 * Whether step `step` (numbered from 0) ends with a validation: after every
 * `every` steps and after the last; step 0's is the baseline instead when there is one.
 */
function validatesAfter(validation: NonNullable<TrainRlConfig["validation"]>, step: number, last: number) {
  if (step === 0 && validation.baseline !== false) return false;
  return (step + 1) % validation.every === 0 || (step === last && validation.final !== false);
}

/** Trains through the whole dataset; returns every step's metrics. */
export async function trainRl(config: TrainRlConfig): Promise<MetricsRecord[]> {
  const tc = config.trainingClient;
  const history: MetricsRecord[] = [];
  let sampler = await publish(tc);
  const startStep = config.startStep ?? 0;
  const last = config.dataset.batches - 1;
  // Before any training: the baseline every later validation is compared with.
  let baseline: RlStep["validated"];
  if (config.validation && config.validation.baseline !== false && startStep === 0 && last >= 0) {
    const { metrics } = await evaluate(sampler, config.validation.dataset, config);
    if (config.signal?.aborted) return history;
    baseline = { version: sampler.version, metrics };
  }
  for (let step = startStep; step < config.dataset.batches; step++) {
    if (await config.shouldStop?.()) break;
    // The whole window uses one snapshot version (C4).
    const groups = await rolloutGroups(config.dataset.batch(step), sampler.client, {
      policyVersion: sampler.version,
      ...(config.seed === undefined ? {} : { seed: config.seed + step * 1_000_003 }),
      ...(config.sampling ? { sampling: config.sampling } : {}),
      ...(config.maxTurns ? { maxTurns: config.maxTurns } : {}),
      ...(config.signal ? { signal: config.signal } : {}),
    });
    // Cut short: this step's episodes are incomplete, so none of it is trained or stored.
    if (config.signal?.aborted) break;
    // A non-finite loss or gradient norm changed nothing: the run ends here as diverged.
    const adam = adamAtStep(config, step, config.dataset.batches);
    const { record, trained, trajectories } = await trainOnGroups(
      config,
      groups,
      sampler.version,
      adam,
      config.mixedIn?.(step),
    ).catch((error: unknown) => {
      throw divergedAt(step, error);
    });
    record.step = step;
    // Sync point: the next rollout window samples the new snapshot.
    if (trained) sampler = await publish(tc);
    record["policy/version"] = sampler.version;
    if (config.checkpointEvery && (step + 1) % config.checkpointEvery === 0) {
      await (await tc.saveState(`rl-step-${step + 1}`)).result();
      record["checkpoint/saved"] = 1;
    }
    let validated: RlStep["validated"];
    if (step === 0 && baseline) validated = baseline;
    else if (config.validation && validatesAfter(config.validation, step, last)) {
      const { metrics } = await evaluate(sampler, config.validation.dataset, config);
      // The step itself was trained; an interrupted validation is left out rather than recorded half done.
      if (!config.signal?.aborted) validated = { version: sampler.version, metrics };
    }
    if (validated) Object.assign(record, validated.metrics, { step });
    await config.onStep?.({ step, groups, record, trajectories, ...(validated ? { validated } : {}) });
    config.sink?.write(record);
    history.push(record);
  }
  return history;
}
