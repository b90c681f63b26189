// Runs one server-side job on this worker with in-process clients: RL and SFT
// through the SDK loops, EVAL through the same rollout with no optimizer. Every
// step's trajectories and metrics are stored before the next step begins, and
// the training state is checkpointed every `checkpointEvery` steps, so that a job
// whose worker died resumes elsewhere from its last checkpoint.
import { recordJobStep, type TrajectoryInput, type ValidationResult } from "@opentinker/db";
import { type PolicySession, tokenizerOf, visionDims } from "@opentinker/engine";
import {
  bestMetricOf,
  type RlJobConfig,
  ZEvalJobConfig,
  ZRlJobConfig,
  ZSftJobConfig,
} from "@opentinker/protocol";
import { conversationToDatum, evaluate, type RlStep, scoreStep, trainRl, trainSft } from "@opentinker/sdk";
import type { EngineHost } from "../engine-host.ts";
import { retryTransient } from "../faults.ts";
import { type DatasetModel, type EnvironmentRow, environmentDataset } from "./datasets.ts";
import { saveJobCheckpoint } from "./job-checkpoints.ts";
import { jobSampler, jobTrainingClient } from "./job-clients.ts";
import { trajectoryRows } from "./trajectories.ts";

export interface RunnableJob {
  id: string;
  teamId: string;
  adapterId: string;
  kind: "RL" | "SFT" | "EVAL";
  config: unknown;
  environment: EnvironmentRow | null;
}

export interface JobRun {
  host: EngineHost;
  job: RunnableJob;
  session: PolicySession;
  /** The step to start at (0, or the step of the checkpoint resumed from). */
  startStep: number;
  /** True when the job should stop at the next step boundary (cancelled, draining). */
  shouldStop: () => Promise<boolean>;
  /** Aborts the step in flight (cancelled, draining): nothing of it is trained or stored. */
  signal: AbortSignal;
}

/** Checkpoints the job's progress after `step` steps (its name is how a resumed job finds it). */
function saveProgress(run: JobRun, step: number) {
  return saveJobCheckpoint(run.host.db, run.job, run.session, step);
}

/** Stores a step's rows and progress, retried through transient faults (storing is idempotent per step). */
function storeStep(
  run: JobRun,
  step: number,
  values: Record<string, number>,
  trajectories: TrajectoryInput[],
  validated?: ValidationResult,
) {
  const { host, job } = run;
  return retryTransient(`job ${job.id}: store step ${step}`, () =>
    recordJobStep(host.db, job, step, values, trajectories, validated),
  );
}

function environmentOf(job: RunnableJob): EnvironmentRow {
  if (!job.environment) throw new RangeError(`job ${job.id} has no environment (RL and EVAL jobs need one)`);
  return job.environment;
}

/** The job's environment as a dataset of `shape`, drawn for the base model (its picture size, if any). */
function jobDataset(run: JobRun, shape: Parameters<typeof environmentDataset>[1]) {
  const vision = run.session.policy.base.config.vision;
  const model: DatasetModel = {
    image: vision ? { size: vision.imageSize, tokens: visionDims(vision).numPatches } : null,
  };
  return environmentDataset(environmentOf(run.job), shape, run.host.remoteEnvHosts, model);
}

/** A step's validation as the adapter's best version sees it: the version it measured and the environment's metric. */
function validationResult(job: RunnableJob, step: RlStep) {
  if (!step.validated) return undefined;
  const metric = bestMetricOf(job.environment?.builtin);
  const value = step.validated.metrics[metric];
  if (value === undefined) return undefined;
  return { adapterId: job.adapterId, version: step.validated.version, metric, value, step: step.step };
}

/** The KL of an RL job's training calls: to the frozen base, or to the snapshot its config names. */
const referenceKlConfig = ({ referenceKl, referenceModel }: RlJobConfig) => ({
  referenceKl,
  ...(referenceModel ? { referenceModel } : {}),
});

async function runRl(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZRlJobConfig.parse(job.config);
  const tokenizer = tokenizerOf(session.policy.base);
  const shape = {
    tokenizer,
    seed: config.seed,
    groupsPerBatch: config.groupsPerStep,
    groupSize: config.groupSize,
  };
  await trainRl({
    trainingClient: jobTrainingClient(host, session, job.id, run.signal),
    dataset: jobDataset(run, { ...shape, split: "train", batches: config.steps }),
    lossFn: config.lossFn,
    adam: config.adam,
    lrSchedule: config.lrSchedule,
    sampling: config.sampling,
    advantages: { scaleByStd: config.scaleByStd, dropConstantGroups: config.dropConstantGroups },
    ...(config.referenceKl > 0 ? { lossFnConfig: referenceKlConfig(config) } : {}),
    seed: config.seed,
    startStep: run.startStep,
    shouldStop: run.shouldStop,
    signal: run.signal,
    ...(config.validation
      ? {
          validation: {
            every: config.validation.every,
            dataset: jobDataset(run, {
              ...shape,
              split: "validation",
              batches: 1,
              groupsPerBatch: config.validation.groups,
              groupSize: config.validation.groupSize,
            }),
          },
        }
      : {}),
    onStep: async (result) => {
      const { step, record, trajectories } = result;
      const rows = trajectoryRows(step, trajectories);
      await storeStep(run, step, record, rows, validationResult(job, result));
      if ((step + 1) % config.checkpointEvery === 0 || step + 1 === config.steps)
        await saveProgress(run, step + 1);
    },
  });
}

async function runSft(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZSftJobConfig.parse(job.config);
  const tokenizer = tokenizerOf(session.policy.base);
  const data = config.conversations.map((c) => conversationToDatum(tokenizer, c.messages));
  await trainSft({
    trainingClient: jobTrainingClient(host, session, job.id),
    data,
    epochs: config.epochs,
    batchSize: config.batchSize,
    adam: config.adam,
    startStep: run.startStep,
    shouldStop: run.shouldStop,
    onStep: async (record) => {
      await storeStep(run, record.step, record, []);
      await saveProgress(run, record.step + 1);
    },
  });
}

async function runEval(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZEvalJobConfig.parse(job.config);
  const handle = config.handle ?? (await session.publish(job.id)).handle;
  const sampler = await jobSampler(host, session, handle, run.signal);
  const shape = {
    tokenizer: tokenizerOf(session.policy.base),
    split: "validation" as const,
    seed: config.seed,
    batches: 1,
    groupsPerBatch: config.groups,
    groupSize: config.groupSize,
  };
  const dataset = jobDataset(run, shape);
  const result = await evaluate(sampler, dataset, {
    sampling: config.sampling,
    seed: config.seed,
    signal: run.signal,
  });
  // Cut short: the job stops (or goes back to the queue) with nothing half evaluated stored.
  if (run.signal.aborted) return;
  await storeStep(
    run,
    0,
    result.metrics,
    trajectoryRows(0, scoreStep(result.groups, sampler.version).trajectories),
  );
}

export function runJob(run: JobRun): Promise<void> {
  if (run.job.kind === "RL") return runRl(run);
  if (run.job.kind === "SFT") return runSft(run);
  return runEval(run);
}
