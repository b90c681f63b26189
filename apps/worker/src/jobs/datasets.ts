// A job's environment as a dataset of seeded batches (packages/envs).

import {
  arithmeticDataset,
  calculatorDataset,
  guessNumberDataset,
  nimEvaluationDataset,
  nimSelfPlayDataset,
  shapesDataset,
  type TaskDatasetOptions,
} from "@opentinker/envs";
import {
  BUILTIN_CONFIG_DEFAULTS,
  type BuiltinEnvConfig,
  isAllowedRemoteHost,
  ZBuiltinEnvConfig,
  ZBuiltinEnvironment,
} from "@opentinker/protocol";
import { type RlDataset, remoteEnvDataset } from "@opentinker/sdk";

export interface EnvironmentRow {
  kind: "BUILTIN" | "REMOTE";
  builtin: string | null;
  url: string | null;
  config: unknown;
}

/** The picture a vision-language base model takes: its side in pixels and the positions it fills. */
export interface ImageInput {
  size: number;
  tokens: number;
}

/** What the job's base model brings to its environment: its image input, if it has one. */
export interface DatasetModel {
  image: ImageInput | null;
}

/** Only the fields that are set, so the environment's own defaults apply to the rest. */
const defined = <T extends object>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * nim: training plays the configured opponent (self-play: every seat learns);
 * validation and evaluation play the fixed opponent named, else the random one
 * (docs/results.md's measure). A group is `groupSize` games.
 */
function nimDataset(config: BuiltinEnvConfig, shape: TaskDatasetOptions): RlDataset {
  const common = {
    batches: shape.batches,
    groupsPerBatch: shape.groupsPerBatch,
    games: shape.groupSize,
    ...defined({ lenient: config.lenient, illegalPenalty: config.illegalPenalty }),
  };
  const opponent = config.opponent ?? BUILTIN_CONFIG_DEFAULTS.opponent;
  if (shape.split === "train")
    return opponent === "self-play"
      ? nimSelfPlayDataset({ ...common, seed: shape.seed })
      : nimEvaluationDataset({ ...common, seed: shape.seed, opponent });
  // Held-out games: other seeds than training's, as the experiment runner draws them.
  return nimEvaluationDataset({
    ...common,
    seed: shape.seed + 1,
    opponent: opponent === "optimal" ? "optimal" : "random",
  });
}

function shapesOf(config: BuiltinEnvConfig, shape: TaskDatasetOptions, model: DatasetModel): RlDataset {
  if (!model.image)
    throw new RangeError(
      "shapes prompts hold a picture: its jobs need an adapter over a vision-language base model (such as opentinker-vl-tiny)",
    );
  return shapesDataset({
    ...shape,
    ...defined({ formatPenalty: config.formatPenalty, maxTokens: config.maxTokens }),
    size: model.image.size,
    imageTokens: model.image.tokens,
  });
}

function builtinDataset(env: EnvironmentRow, shape: TaskDatasetOptions, model: DatasetModel): RlDataset {
  const kind = ZBuiltinEnvironment.parse(env.builtin);
  const config: BuiltinEnvConfig = ZBuiltinEnvConfig.parse(env.config ?? {});
  const text = defined({ formatPenalty: config.formatPenalty, maxTokens: config.maxTokens });
  switch (kind) {
    case "arithmetic":
      return arithmeticDataset({
        ...shape,
        ...text,
        ...(config.maxOperand ? { maxOperand: config.maxOperand } : {}),
      });
    case "guess-number":
      return guessNumberDataset({
        ...shape,
        ...text,
        ...(config.maxNumber ? { max: config.maxNumber } : {}),
        ...(config.maxGuesses ? { maxTurns: config.maxGuesses } : {}),
      });
    case "nim":
      return nimDataset(config, shape);
    case "shapes":
      return shapesOf(config, shape, model);
    case "calculator":
      return calculatorDataset({
        ...shape,
        ...text,
        ...defined({ callCost: config.callCost, maxCalls: config.maxCalls }),
      });
  }
}

/** `allowedHosts`: this worker's allow-list for remote environments (its OPENTINKER_REMOTE_ENV_HOSTS). */
export function environmentDataset(
  env: EnvironmentRow,
  shape: TaskDatasetOptions,
  allowedHosts: readonly string[],
  model: DatasetModel = { image: null },
): RlDataset {
  if (env.kind === "BUILTIN") return builtinDataset(env, shape, model);
  const url = env.url ?? "";
  // Checked again here: the allow-list may have changed since the environment was created.
  if (!isAllowedRemoteHost(url, allowedHosts))
    throw new RangeError(
      `remote environment ${url} is not on this worker's allow-list (OPENTINKER_REMOTE_ENV_HOSTS)`,
    );
  const { tokenizer: _tokenizer, ...rest } = shape;
  return remoteEnvDataset(url, { ...rest, config: (env.config ?? {}) as Record<string, unknown> });
}
