// Runs one server-side job on this worker with in-process clients: RL and SFT
// through the SDK loops, EVAL through the same rollout with no optimizer. Every
// step's trajectories and metrics are stored before the next step begins, and
// the training state is checkpointed every `checkpointEvery` steps, so that a job
// whose worker died resumes elsewhere from its last checkpoint.
import { recordJobStep } from "@opentinker/db";
import { ZEvalJobConfig, ZRlJobConfig, ZSftJobConfig } from "@opentinker/protocol";
import { conversationToDatum, evaluate, trainRl, trainSft } from "@opentinker/sdk";
import type { AdapterSession } from "../adapter-session.ts";
import type { EngineHost } from "../engine-host.ts";
import { type EnvironmentRow, environmentDataset } from "./datasets.ts";
import { JobTrainingClient, jobSampler, tokenizerOf } from "./job-clients.ts";
import { trajectoryRows } from "./trajectories.ts";

export interface RunnableJob {
  id: string;
  teamId: string;
  kind: "RL" | "SFT" | "EVAL";
  config: unknown;
  environment: EnvironmentRow | null;
}

export interface JobRun {
  host: EngineHost;
  job: RunnableJob;
  session: AdapterSession;
  /** The step to start at (0, or the step of the checkpoint resumed from). */
  startStep: number;
  /** True when the job should stop at the next step boundary (cancelled, draining). */
  shouldStop: () => Promise<boolean>;
  /** Aborts the step in flight (cancelled, draining): nothing of it is trained or stored. */
  signal: AbortSignal;
}

/** A job's checkpoint after `step` steps; its name is how a resumed job finds it. */
export const checkpointName = (jobId: string, step: number) => `job-${jobId}-step-${step}`;

function environmentOf(job: RunnableJob): EnvironmentRow {
  if (!job.environment) throw new RangeError(`job ${job.id} has no environment (RL and EVAL jobs need one)`);
  return job.environment;
}

async function runRl(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZRlJobConfig.parse(job.config);
  const tokenizer = tokenizerOf(host, session.adapter.baseModelId);
  const shape = {
    tokenizer,
    seed: config.seed,
    groupsPerBatch: config.groupsPerStep,
    groupSize: config.groupSize,
  };
  const client = new JobTrainingClient(host, session, job.id, run.signal);
  await trainRl({
    trainingClient: client,
    dataset: environmentDataset(environmentOf(job), { ...shape, split: "train", batches: config.steps }),
    lossFn: config.lossFn,
    adam: config.adam,
    sampling: config.sampling,
    advantages: { scaleByStd: config.scaleByStd, dropConstantGroups: config.dropConstantGroups },
    seed: config.seed,
    startStep: run.startStep,
    shouldStop: run.shouldStop,
    signal: run.signal,
    ...(config.validation
      ? {
          validation: {
            every: config.validation.every,
            dataset: environmentDataset(environmentOf(job), {
              ...shape,
              split: "validation",
              batches: 1,
              groupsPerBatch: config.validation.groups,
              groupSize: 1,
            }),
          },
        }
      : {}),
    onStep: async (step, groups, record) => {
      await recordJobStep(
        host.db,
        job,
        step,
        record,
        trajectoryRows(groups, step, {
          scaleByStd: config.scaleByStd,
          dropConstantGroups: config.dropConstantGroups,
        }),
      );
      if ((step + 1) % config.checkpointEvery === 0 || step + 1 === config.steps)
        await session.saveState(checkpointName(job.id, step + 1), job.id);
    },
  });
}

async function runSft(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZSftJobConfig.parse(job.config);
  const tokenizer = tokenizerOf(host, session.adapter.baseModelId);
  const data = config.conversations.map((c) => conversationToDatum(tokenizer, c.messages));
  await trainSft({
    trainingClient: new JobTrainingClient(host, session, job.id),
    data,
    epochs: config.epochs,
    batchSize: config.batchSize,
    adam: config.adam,
    startStep: run.startStep,
    shouldStop: run.shouldStop,
    onStep: async (record) => {
      await recordJobStep(host.db, job, record.step, record, []);
      await session.saveState(checkpointName(job.id, record.step + 1), job.id);
    },
  });
}

async function runEval(run: JobRun): Promise<void> {
  const { host, job, session } = run;
  const config = ZEvalJobConfig.parse(job.config);
  const baseId = session.adapter.baseModelId;
  const handle = config.handle ?? (await session.saveWeightsForSampler(job.id)).handle;
  const sampler = await jobSampler(host, session.adapter, handle, run.signal);
  const dataset = environmentDataset(environmentOf(job), {
    tokenizer: tokenizerOf(host, baseId),
    split: "validation",
    seed: config.seed,
    batches: 1,
    groupsPerBatch: config.groups,
    groupSize: config.groupSize,
  });
  const result = await evaluate(sampler, dataset, {
    sampling: config.sampling,
    seed: config.seed,
    signal: run.signal,
  });
  // Cut short: the job stops (or goes back to the queue) with nothing half evaluated stored.
  if (run.signal.aborted) return;
  await recordJobStep(host.db, job, 0, result.metrics, trajectoryRows(result.groups, 0));
}

export function runJob(run: JobRun): Promise<void> {
  if (run.job.kind === "RL") return runRl(run);
  if (run.job.kind === "SFT") return runSft(run);
  return runEval(run);
}
