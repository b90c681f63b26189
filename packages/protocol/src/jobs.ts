// Server-side jobs (issue: control plane): what a team submits to have the
// service run the RL, SFT or evaluation loop for it, and how the API shows them.
import { z } from "zod";
import { ZJobErrorClass } from "./faults.ts";
import { ZSamplerHandle } from "./handles.ts";
import {
  namesUnusedReference,
  UNUSED_REFERENCE,
  ZAdamParams,
  ZLrSchedule,
  ZReferenceKl,
  ZReferenceModel,
} from "./losses.ts";
import { idRequest } from "./resources.ts";
import { ZSamplingKnobs } from "./sampling.ts";
import { configByKind, delegate } from "./wire-by-kind.ts";

/** What happens to a job's snapshots and checkpoints when it ends. */
export const ZRetention = z.enum([
  /** Keep every snapshot and checkpoint. */
  "keep-all",
  /** Keep the final snapshot and final checkpoint; delete the intermediate ones. */
  "keep-final",
]);
export type Retention = z.infer<typeof ZRetention>;
/** What a job keeps when its config names no retention. */
export const DEFAULT_RETENTION: Retention = "keep-final";

const ZSamplingSettings = ZSamplingKnobs.partial();

/**
 * An RL job's config. An omitted field takes the default written beside it,
 * the same for every environment; the settings each built-in environment is
 * known to learn with are its preset (`RL_PRESETS` in presets.ts), which the
 * dashboard's form fills in and an API client may spread into its config.
 */
export const ZRlJobConfig = z
  .object({
    steps: z.number().int().min(1).max(100_000),
    groupsPerStep: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(4)
      .describe("Prompts (groups) sampled per step. Omitted: 4."),
    groupSize: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(8)
      .describe("Samples per prompt; advantages compare them. Omitted: 8."),
    lossFn: z.enum(["importance_sampling", "ppo"]).default("ppo").describe('Omitted: "ppo".'),
    adam: ZAdamParams.partial()
      .default({})
      .describe("AdamW settings; each omitted one takes its default (learningRate 1e-4)."),
    lrSchedule: ZLrSchedule.default("constant").describe(
      'From adam.learningRate at the first step: held ("constant"), or decayed to 0 by the last step ("linear", "cosine"). Omitted: "constant".',
    ),
    sampling: ZSamplingSettings.default({}).describe("Omitted: the sampler's defaults (temperature 1)."),
    scaleByStd: z.boolean().default(false).describe("Omitted: false."),
    referenceKl: ZReferenceKl.default(0).describe(
      "Weight of a full-vocabulary KL to the frozen base model (or to referenceModel) at every position of each sequence (lossFnConfig.referenceKl). Omitted: 0 (none).",
    ),
    referenceModel: ZReferenceModel.optional().describe(
      "A sampler handle of one of the team's snapshots over the adapter's base model, which referenceKl then holds the policy near instead of the frozen base (lossFnConfig.referenceModel): e.g. the adapter's version after an SFT job, so RL keeps what SFT taught. Needs referenceKl > 0. Omitted: the frozen base.",
    ),
    /** Skip groups whose rewards are all equal (no signal); false trains on them with zero advantage. */
    dropConstantGroups: z.boolean().default(true).describe("Omitted: true."),
    seed: z.number().int().min(0).default(0).describe("Omitted: 0."),
    checkpointEvery: z.number().int().min(1).default(1).describe("Omitted: 1."),
    validation: z
      .object({
        every: z.number().int().min(1),
        groups: z.number().int().min(1).max(1024),
        groupSize: z.number().int().min(1).max(256).default(1).describe("Omitted: 1."),
      })
      .optional()
      .describe(
        "Omitted: no validation. Set: the held-out split is rolled out with no training before the first step (recorded at step 0), after every `every` steps and after the last step; the best of them is kept as the adapter's `best` version.",
      ),
    retention: ZRetention.default(DEFAULT_RETENTION).describe(`Omitted: "${DEFAULT_RETENTION}".`),
  })
  .strict()
  .refine((c) => !namesUnusedReference(c), { path: ["referenceModel"], message: UNUSED_REFERENCE });
export type RlJobConfig = z.infer<typeof ZRlJobConfig>;
export type RlJobConfigInput = z.input<typeof ZRlJobConfig>;

export const ZChatMessage = z.object({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string(),
});

export const ZSftJobConfig = z
  .object({
    conversations: z.array(z.object({ messages: z.array(ZChatMessage).min(1) })).min(1),
    epochs: z.number().int().min(1).max(1000).default(1),
    batchSize: z.number().int().min(1).max(4096).default(8),
    adam: ZAdamParams.partial().default({}),
    retention: ZRetention.default(DEFAULT_RETENTION),
  })
  .strict();
export type SftJobConfig = z.infer<typeof ZSftJobConfig>;

export const ZEvalJobConfig = z
  .object({
    /** The snapshot to evaluate: one of the team's, over the adapter's base model (default: the adapter's latest). */
    handle: ZSamplerHandle.optional(),
    groups: z.number().int().min(1).max(4096).default(16),
    groupSize: z.number().int().min(1).max(256).default(1),
    sampling: ZSamplingSettings.default({}),
    seed: z.number().int().min(0).default(0),
  })
  .strict();
export type EvalJobConfig = z.infer<typeof ZEvalJobConfig>;

/** Each job kind's config schema. */
const JOB_CONFIGS = { RL: ZRlJobConfig, SFT: ZSftJobConfig, EVAL: ZEvalJobConfig } as const;

/** A job's name as a caller gives it; omitted, the job is named by `defaultJobName`. */
export const ZJobName = z.string().trim().min(1).max(128);

/**
 * What a job is called when its creator names none: its environment and its
 * adapter ("arithmetic · lora-a"), or its kind for a job without an
 * environment ("sft · lora-a"). The job-names migration backfills old jobs
 * with the same words, in SQL.
 */
export function defaultJobName(job: {
  kind: "RL" | "SFT" | "EVAL";
  environmentName: string | null;
  adapterName: string;
}): string {
  return `${job.environmentName ?? job.kind.toLowerCase()} · ${job.adapterName}`;
}

export const ZJobInput = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("RL"),
    name: ZJobName.optional(),
    adapterId: z.string().min(1),
    environmentId: z.string().min(1),
    config: ZRlJobConfig,
  }),
  z.object({
    kind: z.literal("SFT"),
    name: ZJobName.optional(),
    adapterId: z.string().min(1),
    // Named but unused would hide a mistake (and an id of another team's): refused instead.
    environmentId: z.never({ error: "an SFT job takes no environment" }).optional(),
    config: ZSftJobConfig,
  }),
  z.object({
    kind: z.literal("EVAL"),
    name: ZJobName.optional(),
    adapterId: z.string().min(1),
    environmentId: z.string().min(1),
    config: ZEvalJobConfig,
  }),
]);
export type JobInput = z.infer<typeof ZJobInput>;

/** A size of a job that a team's quota bounds, with the config field that sets it. */
export interface JobDimension {
  value: number;
  field: string;
}

/**
 * How big a job is, in the two dimensions a team's quota bounds: the steps it
 * runs and the sequences one step samples or trains.
 */
export function jobSize(input: JobInput): { steps: JobDimension; sequencesPerStep: JobDimension } {
  if (input.kind === "RL") {
    const { steps, groupsPerStep, groupSize, validation } = input.config;
    const rollouts = groupsPerStep * groupSize;
    const validated = validation ? validation.groups * validation.groupSize : 0;
    return {
      steps: { value: steps, field: "config.steps" },
      sequencesPerStep:
        validated > rollouts
          ? { value: validated, field: "config.validation.groups × config.validation.groupSize" }
          : { value: rollouts, field: "config.groupsPerStep × config.groupSize" },
    };
  }
  if (input.kind === "SFT") {
    const { conversations, epochs, batchSize } = input.config;
    return {
      steps: { value: epochs * Math.ceil(conversations.length / batchSize), field: "config.epochs" },
      sequencesPerStep: { value: batchSize, field: "config.batchSize" },
    };
  }
  return {
    steps: { value: 1, field: "config" },
    sequencesPerStep: {
      value: input.config.groups * input.config.groupSize,
      field: "config.groups × config.groupSize",
    },
  };
}

/**
 * How many steps a stored job runs (`jobSize`'s count, read back from its kind
 * and config); undefined for a config today's schema no longer accepts.
 */
export function jobSteps(job: { kind: JobInput["kind"]; config: unknown }): number | undefined {
  // The ids only make the input complete: the count depends on the kind and config alone.
  const environment = job.kind === "SFT" ? {} : { environmentId: "-" };
  const input = ZJobInput.safeParse({ kind: job.kind, adapterId: "-", ...environment, config: job.config });
  return input.success ? jobSize(input.data).steps.value : undefined;
}

/** The wire form of job creation: one flat object, checked by kind. */
export const ZJobRequest = z
  .object({
    kind: z.enum(["RL", "SFT", "EVAL"]),
    name: z
      .string()
      .optional()
      .describe(
        '1–128 characters, trimmed. Omitted: "<environment> · <adapter>" ("sft · <adapter>" for SFT).',
      ),
    adapterId: z.string(),
    environmentId: z.string().optional(),
    config: configByKind(JOB_CONFIGS),
  })
  .superRefine(delegate(ZJobInput));

export const ZJobIdRequest = idRequest("jobId");

/**
 * A job as the OpenAPI document shows it: one object per kind (`kind` a
 * constant) whose `config` is that kind's, as stored (defaults filled in). The
 * parser itself keeps `config` a plain record, so that a job stored under an
 * older schema still reads back.
 */
function documentedByKind<T extends z.ZodObject<{ kind: z.ZodType; config: z.ZodType }>>(job: T): T {
  const variants = Object.entries(JOB_CONFIGS).map(([kind, config]) => {
    const variant = job.extend({ kind: z.literal(kind), config });
    const { $schema: _, ...schema } = z.toJSONSchema(variant, { io: "output", unrepresentable: "any" });
    return { title: `${kind} job`, ...schema };
  });
  return job.meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
      jsonSchema.oneOf = variants;
    },
  });
}

const ZJobFields = z.object({
  id: z.string(),
  /** Given at creation, or `defaultJobName`'s. */
  name: z.string(),
  adapterId: z.string(),
  environmentId: z.string().nullable(),
  kind: z.enum(["SFT", "RL", "EVAL"]),
  config: z.record(z.string(), z.unknown()),
  status: z.enum(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]),
  step: z.number(),
  error: z.string().nullable(),
  /** Set when the job FAILED: its own config or data (USER) or a bug of ours (INTERNAL). */
  errorClass: ZJobErrorClass.nullable(),
  /** Transient faults the job resumed from (back to the queue, then its last checkpoint), and the last one's message. */
  faults: z.number().int(),
  lastFault: z.string().nullable(),
  /** Why a QUEUED job has not started yet (e.g. its team holds its share of the worker slots). */
  waitingFor: z.string().nullable(),
  cancelRequested: z.boolean(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

/** A job as the API shows it. */
export const ZJob = documentedByKind(ZJobFields);
export type JobInfo = z.infer<typeof ZJob>;

/**
 * What the jobs list can be ordered by. A job's duration runs from its start
 * to its end (to now while it runs); jobs that never started come last.
 */
export const JOB_SORT_KEYS = ["createdAt", "name", "status", "duration"] as const;
export type JobSortKey = (typeof JOB_SORT_KEYS)[number];

export const ZJobListRequest = z.object({
  sort: z.enum(JOB_SORT_KEYS).default("createdAt"),
  direction: z.enum(["asc", "desc"]).default("desc"),
  /** From 1. */
  page: z.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.number().int().min(1).max(100).default(20),
});
export type JobListRequest = z.output<typeof ZJobListRequest>;

/**
 * The metric a list shows for a job of each kind, by preference: validation
 * when the job has recorded it, else training (the names the SDK loops record).
 */
export const JOB_HEADLINE_METRICS = {
  RL: ["val/reward/mean", "reward/mean"],
  SFT: ["val/loss/mean", "loss/mean"],
  EVAL: ["val/reward/mean"],
} as const satisfies Record<JobInfo["kind"], readonly string[]>;

/** A job as the jobs list shows it: with its adapter's and environment's names and its headline metric. */
export const ZJobListItem = documentedByKind(
  ZJobFields.extend({
    adapterName: z.string(),
    /** Null for an SFT job, or when the environment was deleted. */
    environmentName: z.string().nullable(),
    /** The newest value of the kind's preferred headline metric; null before any is recorded. */
    metric: z.object({ name: z.string(), step: z.number(), value: z.number() }).nullable(),
  }),
);
export type JobListItem = z.infer<typeof ZJobListItem>;

export const ZJobPage = z.object({
  jobs: z.array(ZJobListItem),
  /** All the team's jobs, over every page. */
  total: z.number(),
  page: z.number(),
  pageSize: z.number(),
});
export type JobPage = z.infer<typeof ZJobPage>;

export const ZJobMetricsRequest = ZJobIdRequest.extend({ sinceStep: z.number().int().min(0).default(0) });
export const ZJobMetric = z.object({ step: z.number(), name: z.string(), value: z.number() });

export const ZJobTrajectoriesRequest = ZJobIdRequest.extend({
  step: z.number().int().min(0),
  decode: z.boolean().default(false),
});

/** A stored trajectory of a job's step. */
export const ZTrajectory = z.object({
  id: z.string(),
  step: z.number(),
  groupIndex: z.number(),
  sampleIndex: z.number(),
  player: z.number(),
  snapshotVersion: z.number(),
  staleness: z.number(),
  status: z.enum(["OK", "FAILED"]),
  failureReason: z.string().nullable(),
  reward: z.number(),
  tokens: z.array(z.number()),
  /** With decode: each token as text. */
  pieces: z.array(z.string()).optional(),
  mask: z.array(z.number()),
  logprobs: z.array(z.number()),
  advantages: z.array(z.number()),
});
export type TrajectoryInfo = z.infer<typeof ZTrajectory>;
