// The new-job form as data: what the fields hold (text, as typed), how they
// become a job request, and the protocol's verdict on it, per field. The zod
// schemas are the server's own (@opentinker/protocol), so whatever passes here
// passes there.
import {
  DEFAULT_RETENTION,
  type LrSchedule,
  type Retention,
  rlPresetOf,
  ZEvalJobConfig,
  ZJobName,
  ZRlJobConfig,
  ZSftJobConfig,
} from "@opentinker/protocol";
import type { z } from "zod";

export type JobKind = "RL" | "SFT" | "EVAL";

export interface JobFormValues {
  kind: JobKind;
  /** Blank: the server names the job after its environment and adapter. */
  name: string;
  adapterId: string;
  environmentId: string;
  // RL
  steps: string;
  groupsPerStep: string;
  groupSize: string;
  lossFn: "ppo" | "importance_sampling";
  lrSchedule: LrSchedule;
  checkpointEvery: string;
  validationEvery: string;
  validationGroups: string;
  validationGroupSize: string;
  dropConstantGroups: boolean;
  scaleByStd: boolean;
  referenceKl: string;
  /** A snapshot handle; blank: the base model. */
  referenceModel: string;
  // RL and SFT
  learningRate: string;
  gradClipNorm: string;
  retention: Retention;
  // RL and EVAL
  temperature: string;
  seed: string;
  // SFT
  conversations: string;
  epochs: string;
  batchSize: string;
  // EVAL
  evalGroups: string;
  evalGroupSize: string;
}

export type FieldName = keyof JobFormValues;
export type FieldErrors = Partial<Record<FieldName, string>>;

const EXAMPLE_CONVERSATIONS = [
  {
    messages: [
      { role: "user", content: "What is 2 + 3?" },
      { role: "assistant", content: "5" },
    ],
  },
];

/** The schemas' defaults, so the form starts out valid except for what has none. */
export const INITIAL_VALUES: JobFormValues = {
  kind: "RL",
  name: "",
  adapterId: "",
  environmentId: "",
  steps: "",
  groupsPerStep: "4",
  groupSize: "8",
  lossFn: "ppo",
  lrSchedule: "constant",
  checkpointEvery: "1",
  validationEvery: "",
  validationGroups: "",
  validationGroupSize: "",
  dropConstantGroups: true,
  scaleByStd: false,
  referenceKl: "0",
  referenceModel: "",
  learningRate: "0.0001",
  gradClipNorm: "0",
  retention: DEFAULT_RETENTION,
  temperature: "",
  seed: "0",
  conversations: JSON.stringify(EXAMPLE_CONVERSATIONS, null, 2),
  epochs: "1",
  batchSize: "8",
  evalGroups: "16",
  evalGroupSize: "1",
};

export const needsEnvironment = (kind: JobKind) => kind !== "SFT";

/**
 * The RL fields as the built-in environment's preset sets them (the settings
 * docs/results.md shows learning), the rest as they were; unchanged for an
 * environment without one (a remote environment).
 */
export function withEnvironmentPreset(values: JobFormValues, builtin: string | null): JobFormValues {
  const preset = rlPresetOf(builtin)?.config;
  if (!preset) return values;
  return {
    ...values,
    steps: String(preset.steps),
    groupsPerStep: String(preset.groupsPerStep),
    groupSize: String(preset.groupSize),
    lossFn: preset.lossFn,
    lrSchedule: preset.lrSchedule,
    learningRate: String(preset.adam.learningRate),
    gradClipNorm: String(preset.adam.gradClipNorm),
    referenceKl: String(preset.referenceKl),
    temperature: preset.sampling.temperature === undefined ? "" : String(preset.sampling.temperature),
    validationEvery: String(preset.validation.every),
    validationGroups: String(preset.validation.groups),
    validationGroupSize: String(preset.validation.groupSize),
  };
}

export interface JobRequest {
  kind: JobKind;
  name?: string;
  adapterId: string;
  environmentId?: string;
  config: Record<string, unknown>;
}

export type Verdict = { ok: true; request: JobRequest } | { ok: false; errors: FieldErrors };

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/**
 * Reads the text fields of a kind into its config (blank optional fields are
 * left out, so the schema's defaults apply) and checks it with the protocol's
 * schema; errors are keyed by the field that shows them.
 */
export function validateJobForm(values: JobFormValues): Verdict {
  const errors: FieldErrors = {};
  const number = (field: FieldName): number | undefined => {
    const text = String(values[field]).trim();
    if (text === "") return undefined;
    if (NUMBER.test(text)) return Number(text);
    errors[field] = "Enter a number";
    return undefined;
  };

  if (!values.adapterId) errors.adapterId = "Choose an adapter";
  const name = values.name.trim() === "" ? undefined : ZJobName.safeParse(values.name);
  if (name && !name.success && name.error.issues[0]) errors.name = describeIssue(name.error.issues[0], false);
  if (needsEnvironment(values.kind) && !values.environmentId) errors.environmentId = "Choose an environment";

  const { schema, config, fields } = configOf(values, number, errors);
  const parsed = schema.safeParse(config, { reportInput: true });
  if (!parsed.success)
    for (const issue of parsed.error.issues) {
      const field = fieldOf(fields, issue.path);
      // A field keeps its first complaint (e.g. "Enter a number" over the schema's "Required").
      if (!errors[field]) errors[field] = describeIssue(issue, field === "conversations");
    }
  if (Object.keys(errors).length > 0 || !parsed.success) return { ok: false, errors };
  return {
    ok: true,
    request: {
      kind: values.kind,
      ...(name?.success ? { name: name.data } : {}),
      adapterId: values.adapterId,
      ...(needsEnvironment(values.kind) ? { environmentId: values.environmentId } : {}),
      config: parsed.data as Record<string, unknown>,
    },
  };
}

/** Which field shows an issue at a config path: the longest registered prefix. */
type FieldPaths = Record<string, FieldName>;

function configOf(
  values: JobFormValues,
  number: (field: FieldName) => number | undefined,
  errors: FieldErrors,
): { schema: z.ZodType; config: Record<string, unknown>; fields: FieldPaths } {
  const temperature = number("temperature");
  const sampling = temperature === undefined ? {} : { temperature };
  const learningRate = number("learningRate");
  const gradClipNorm = number("gradClipNorm");
  const adam = {
    ...(learningRate === undefined ? {} : { learningRate }),
    ...(gradClipNorm === undefined ? {} : { gradClipNorm }),
  };

  if (values.kind === "RL") {
    const every = number("validationEvery");
    const groups = number("validationGroups");
    const groupSize = number("validationGroupSize");
    const validation =
      values.validationEvery.trim() === "" && values.validationGroups.trim() === ""
        ? undefined
        : { every, groups, ...(groupSize === undefined ? {} : { groupSize }) };
    return {
      schema: ZRlJobConfig,
      config: {
        steps: number("steps"),
        groupsPerStep: number("groupsPerStep"),
        groupSize: number("groupSize"),
        lossFn: values.lossFn,
        adam,
        lrSchedule: values.lrSchedule,
        sampling,
        scaleByStd: values.scaleByStd,
        referenceKl: number("referenceKl"),
        ...(values.referenceModel.trim() === "" ? {} : { referenceModel: values.referenceModel.trim() }),
        dropConstantGroups: values.dropConstantGroups,
        seed: number("seed"),
        checkpointEvery: number("checkpointEvery"),
        ...(validation ? { validation } : {}),
        retention: values.retention,
      },
      fields: {
        steps: "steps",
        groupsPerStep: "groupsPerStep",
        groupSize: "groupSize",
        lossFn: "lossFn",
        lrSchedule: "lrSchedule",
        adam: "learningRate",
        "adam.gradClipNorm": "gradClipNorm",
        referenceKl: "referenceKl",
        referenceModel: "referenceModel",
        sampling: "temperature",
        seed: "seed",
        checkpointEvery: "checkpointEvery",
        validation: "validationEvery",
        "validation.every": "validationEvery",
        "validation.groups": "validationGroups",
        "validation.groupSize": "validationGroupSize",
        retention: "retention",
      },
    };
  }

  if (values.kind === "SFT") {
    let conversations: unknown;
    try {
      conversations = JSON.parse(values.conversations);
    } catch (error) {
      errors.conversations = `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`;
    }
    return {
      schema: ZSftJobConfig,
      config: {
        conversations,
        epochs: number("epochs"),
        batchSize: number("batchSize"),
        adam,
        retention: values.retention,
      },
      fields: {
        conversations: "conversations",
        epochs: "epochs",
        batchSize: "batchSize",
        adam: "learningRate",
        "adam.gradClipNorm": "gradClipNorm",
        retention: "retention",
      },
    };
  }

  return {
    schema: ZEvalJobConfig,
    config: {
      groups: number("evalGroups"),
      groupSize: number("evalGroupSize"),
      sampling,
      seed: number("seed"),
    },
    fields: { groups: "evalGroups", groupSize: "evalGroupSize", sampling: "temperature", seed: "seed" },
  };
}

function fieldOf(fields: FieldPaths, path: readonly PropertyKey[]): FieldName {
  for (let n = path.length; n > 0; n--) {
    const field = fields[path.slice(0, n).map(String).join(".")];
    if (field) return field;
  }
  // Every path of a config's schema starts with one of its registered keys;
  // an unexpected key (the schemas are strict) is the form's fault, shown on the first field.
  return Object.values(fields)[0] as FieldName;
}

/** A zod issue in words a person filling a form expects. */
function describeIssue(issue: z.core.$ZodIssue, withPath: boolean): string {
  const where = withPath && issue.path.length > 1 ? `${jsonPath(issue.path.slice(1))}: ` : "";
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return `${where}Required`;
      if (issue.expected === "int") return `${where}Enter a whole number`;
      return `${where}Expected ${issue.expected}`;
    case "too_small":
      if (issue.origin === "array") return `${where}Needs at least ${issue.minimum} item(s)`;
      return `${where}Must be ${issue.inclusive ? "at least" : "more than"} ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "string") return `${where}At most ${issue.maximum} characters`;
      return `${where}Must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}`;
    case "invalid_value":
      return `${where}Must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "unrecognized_keys":
      return `${where}Unknown key(s): ${issue.keys.join(", ")}`;
    default:
      return `${where}${issue.message}`;
  }
}

/** `[0].messages[1].role`, the way the JSON is written. */
function jsonPath(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${String(key)}`))
    .join("");
}
