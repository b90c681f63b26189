// Server-side jobs and environments (issue: control plane): what a team submits
// to have the service run the RL, SFT or evaluation loop for it.
import { z } from "zod";
import { ZSamplerHandle } from "./handles.ts";
import { ZAdamParams } from "./losses.ts";
import { idRequest } from "./resources.ts";

/** Built-in environments a server-side job can run (packages/envs). */
export const BUILTIN_ENVIRONMENTS = ["arithmetic", "guess-number", "nim", "shapes"] as const;
export const ZBuiltinEnvironment = z.enum(BUILTIN_ENVIRONMENTS);

/** nim: who the learner plays while training (self-play trains every seat of its games). */
export const NIM_OPPONENTS = ["self-play", "random", "optimal"] as const;

export const ZBuiltinEnvConfig = z
  .object({
    /** arithmetic: operands are drawn from [0, maxOperand]. */
    maxOperand: z.number().int().min(1).max(1_000_000),
    /** guess-number: the secret is in [1, maxNumber]. */
    maxNumber: z.number().int().min(2).max(1_000_000),
    maxGuesses: z.number().int().min(1).max(64),
    formatPenalty: z.number().finite(),
    maxTokens: z.number().int().min(1).max(4096),
    /** nim: the training opponent; validation and EVAL jobs play the random one unless a fixed one is named. */
    opponent: z.enum(NIM_OPPONENTS),
    /** nim: the reward of an illegal move (worse than a loss, −1). */
    illegalPenalty: z.number().finite().min(-100).max(0),
    /** nim: any token is a move (for a model that rarely writes digits). */
    lenient: z.boolean(),
  })
  .partial()
  .strict();
export type BuiltinEnvConfig = z.infer<typeof ZBuiltinEnvConfig>;
export type BuiltinEnvConfigKey = keyof BuiltinEnvConfig;

/** The config fields each built-in reads (the others are ignored, as they always were). */
export const BUILTIN_CONFIG_FIELDS: Record<z.infer<typeof ZBuiltinEnvironment>, BuiltinEnvConfigKey[]> = {
  arithmetic: ["maxOperand", "formatPenalty", "maxTokens"],
  "guess-number": ["maxNumber", "maxGuesses", "formatPenalty", "maxTokens"],
  nim: ["opponent", "illegalPenalty", "lenient"],
  shapes: ["formatPenalty", "maxTokens"],
};

/**
 * What an absent field means, as packages/envs applies it (its tests hold the
 * two equal), so the dashboard can show it. guess-number draws its range per
 * game when maxNumber is absent.
 */
export const BUILTIN_CONFIG_DEFAULTS = {
  maxOperand: 12,
  maxNumber: "drawn per game from 8, 12, 16, 20, 24 (16 held out for validation)",
  maxGuesses: 6,
  formatPenalty: -0.1,
  maxTokens: 8,
  opponent: "self-play",
  illegalPenalty: -1.5,
  lenient: false,
} as const satisfies Record<BuiltinEnvConfigKey, string | number | boolean>;

export const ZEnvironmentInput = z.discriminatedUnion("kind", [
  z.object({
    name: z.string().min(1).max(128),
    kind: z.literal("BUILTIN"),
    builtin: ZBuiltinEnvironment,
    config: ZBuiltinEnvConfig.default({}),
  }),
  z.object({
    name: z.string().min(1).max(128),
    kind: z.literal("REMOTE"),
    /** Base URL of an environment server answering POST <url>/reset and <url>/step. */
    url: z.url({ protocol: /^https?$/ }),
    config: z.record(z.string(), z.unknown()).default({}),
  }),
]);
export type EnvironmentInput = z.infer<typeof ZEnvironmentInput>;

/** What happens to a job's snapshots and checkpoints when it ends. */
export const ZRetention = z.enum([
  /** Keep every snapshot and checkpoint. */
  "keep-all",
  /** Keep the final snapshot and final checkpoint; delete the intermediate ones. */
  "keep-final",
]);

const ZSamplingSettings = z
  .object({
    temperature: z.number().min(0).finite(),
    topK: z.number().int().min(-1),
    topP: z.number().gt(0).max(1),
  })
  .partial();

export const ZRlJobConfig = z
  .object({
    steps: z.number().int().min(1).max(100_000),
    groupsPerStep: z.number().int().min(1).max(1024).default(4),
    groupSize: z.number().int().min(1).max(256).default(8),
    lossFn: z.enum(["importance_sampling", "ppo"]).default("ppo"),
    adam: ZAdamParams.partial().default({}),
    sampling: ZSamplingSettings.default({}),
    scaleByStd: z.boolean().default(false),
    /** Skip groups whose rewards are all equal (no signal); false trains on them with zero advantage. */
    dropConstantGroups: z.boolean().default(true),
    seed: z.number().int().min(0).default(0),
    checkpointEvery: z.number().int().min(1).default(1),
    validation: z
      .object({ every: z.number().int().min(1), groups: z.number().int().min(1).max(1024) })
      .optional(),
    retention: ZRetention.default("keep-final"),
  })
  .strict();
export type RlJobConfig = z.infer<typeof ZRlJobConfig>;

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
    retention: ZRetention.default("keep-final"),
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

export const ZJobInput = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("RL"),
    adapterId: z.string().min(1),
    environmentId: z.string().min(1),
    config: ZRlJobConfig,
  }),
  z.object({
    kind: z.literal("SFT"),
    adapterId: z.string().min(1),
    // Named but unused would hide a mistake (and an id of another team's): refused instead.
    environmentId: z.never({ error: "an SFT job takes no environment" }).optional(),
    config: ZSftJobConfig,
  }),
  z.object({
    kind: z.literal("EVAL"),
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
    return {
      steps: { value: steps, field: "config.steps" },
      sequencesPerStep:
        validation && validation.groups > rollouts
          ? { value: validation.groups, field: "config.validation.groups" }
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

/** Reports every issue of `schema` on `value` as issues of the enclosing check. */
function delegate(schema: z.ZodType) {
  return (value: unknown, ctx: z.RefinementCtx) => {
    const result = schema.safeParse(value);
    if (!result.success)
      for (const issue of result.error.issues)
        ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  };
}

/**
 * A config parsed by kind (by `delegate`, whose messages name the field), shown
 * in the OpenAPI document as any of the kinds' own schemas, so a client sees
 * every field it may send.
 */
function configByKind(kinds: readonly z.ZodType[]) {
  const anyOf = kinds.map((kind) => {
    const { $schema: _, ...schema } = z.toJSONSchema(kind, { io: "input", unrepresentable: "any" });
    return schema;
  });
  return z.record(z.string(), z.unknown()).meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
      jsonSchema.anyOf = anyOf;
    },
  });
}

/**
 * The wire forms of environment and job creation: one flat object each (REST
 * clients and the OpenAPI document see plain fields), checked by kind.
 */
export const ZEnvironmentRequest = z
  .object({
    name: z.string(),
    kind: z.enum(["BUILTIN", "REMOTE"]),
    builtin: ZBuiltinEnvironment.optional(),
    url: z.string().optional(),
    config: configByKind([ZBuiltinEnvConfig, z.record(z.string(), z.unknown())]).optional(),
  })
  .superRefine(delegate(ZEnvironmentInput));

export const ZJobRequest = z
  .object({
    kind: z.enum(["RL", "SFT", "EVAL"]),
    adapterId: z.string(),
    environmentId: z.string().optional(),
    config: configByKind([ZRlJobConfig, ZSftJobConfig, ZEvalJobConfig]),
  })
  .superRefine(delegate(ZJobInput));

export const ZEnvironmentIdRequest = idRequest("environmentId");

/** An environment as the API shows it. */
export const ZEnvironment = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(["BUILTIN", "REMOTE"]),
  builtin: z.string().nullable(),
  url: z.string().nullable(),
  config: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});
export type EnvironmentInfo = z.infer<typeof ZEnvironment>;

export const ZJobIdRequest = idRequest("jobId");

/** A job as the API shows it. */
export const ZJob = z.object({
  id: z.string(),
  adapterId: z.string(),
  environmentId: z.string().nullable(),
  kind: z.enum(["SFT", "RL", "EVAL"]),
  config: z.record(z.string(), z.unknown()),
  status: z.enum(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]),
  step: z.number(),
  error: z.string().nullable(),
  cancelRequested: z.boolean(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});
export type JobInfo = z.infer<typeof ZJob>;

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
