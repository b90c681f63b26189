// Environments a team's jobs run in: the built-in kinds with their settings, and
// remote HTTP environments; what a team submits and how the API shows them.
import { z } from "zod";
import { idRequest } from "./resources.ts";
import { configByKind, delegate } from "./wire-by-kind.ts";

/** Built-in environments a server-side job can run (packages/envs). */
export const BUILTIN_ENVIRONMENTS = ["arithmetic", "guess-number", "nim", "shapes", "calculator"] as const;
export const ZBuiltinEnvironment = z.enum(BUILTIN_ENVIRONMENTS);
export type BuiltinEnvironment = z.infer<typeof ZBuiltinEnvironment>;

/** What each built-in is, and what its jobs need (the dashboard shows it; packages/envs' tests hold it true). */
export const BUILTIN_DESCRIPTIONS: Record<BuiltinEnvironment, string> = {
  arithmetic: "Single turn: add, subtract or multiply two numbers.",
  "guess-number": "Multi-turn: find a secret number from higher/lower feedback.",
  nim: "Two-agent Nim, one pile, take 1–3; whoever takes the last stone wins. A job's group size is its games per group.",
  shapes:
    "Name the shape or count the shapes in a picture. Its jobs need an adapter over a vision-language base model (opentinker-vl-tiny).",
  calculator:
    "Multi-turn with a tool: answer arithmetic, or first call the calculator (calc 12 * 34) and read its reply. Each call costs a little. opentinker-tool-tiny knows the call format.",
};

/** Built-in environments whose prompts hold a picture: their jobs need a vision-language base model. */
export const VISION_ENVIRONMENTS: readonly BuiltinEnvironment[] = ["shapes"];

/** Why a job of a picture environment cannot run over a text-only base model. */
export const visionModelRequired = (builtin: string, model: string): string =>
  `${builtin} prompts hold a picture, and ${model} is a text-only base model: a ${builtin} job needs an adapter over a vision-language base model (such as opentinker-vl-tiny)`;

/** nim: who the learner plays while training (self-play trains every seat of its games). */
export const NIM_OPPONENTS = ["self-play", "random", "optimal"] as const;

export const ZBuiltinEnvConfig = z
  .object({
    /** arithmetic: operands are drawn from [0, maxOperand]. */
    maxOperand: z.number().int().min(1).max(1_000_000),
    /** guess-number: the secret is in [1, maxNumber]. */
    maxNumber: z.number().int().min(2).max(1_000_000),
    maxGuesses: z.number().int().min(1).max(64),
    /** The reward of a malformed answer: a penalty (≤ 0), on the scale of rewards (a right answer is 1). */
    formatPenalty: z.number().finite().min(-100).max(0),
    maxTokens: z.number().int().min(1).max(4096),
    /** nim: the training opponent; validation and EVAL jobs play the random one unless a fixed one is named. */
    opponent: z.enum(NIM_OPPONENTS),
    /** nim: the reward of an illegal move (worse than a loss, −1). */
    illegalPenalty: z.number().finite().min(-100).max(0),
    /** nim: any token is a move (for a model that rarely writes digits). */
    lenient: z.boolean(),
    /** calculator: what each tool call costs, taken from the episode's reward. */
    callCost: z.number().finite().min(0).max(1),
    /** calculator: tool calls an episode may make before it must answer. */
    maxCalls: z.number().int().min(0).max(16),
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
  calculator: ["callCost", "maxCalls", "formatPenalty", "maxTokens"],
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
  illegalPenalty: -3,
  lenient: false,
  callCost: 0.1,
  maxCalls: 2,
} as const satisfies Record<BuiltinEnvConfigKey, string | number | boolean>;

/**
 * Where one built-in's default differs from BUILTIN_CONFIG_DEFAULTS: a tool call
 * is longer than an answer; a malformed guess must cost more than a lost game.
 */
const DEFAULTS_BY_BUILTIN: Partial<Record<BuiltinEnvironment, Partial<Record<BuiltinEnvConfigKey, number>>>> =
  {
    calculator: { maxTokens: 16 },
    "guess-number": { formatPenalty: -1 },
  };

/** What an absent field means for this built-in. */
export function builtinConfigDefault(
  builtin: BuiltinEnvironment,
  key: BuiltinEnvConfigKey,
): string | number | boolean {
  return DEFAULTS_BY_BUILTIN[builtin]?.[key] ?? BUILTIN_CONFIG_DEFAULTS[key];
}

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

/**
 * The wire form of environment creation: one flat object (REST clients and the
 * OpenAPI document see plain fields), checked by kind.
 */
export const ZEnvironmentRequest = z
  .object({
    name: z.string(),
    kind: z.enum(["BUILTIN", "REMOTE"]),
    builtin: ZBuiltinEnvironment.optional(),
    url: z.string().optional(),
    config: configByKind({
      BUILTIN: ZBuiltinEnvConfig,
      REMOTE: z.record(z.string(), z.unknown()),
    }).optional(),
  })
  .superRefine(delegate(ZEnvironmentInput));

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
