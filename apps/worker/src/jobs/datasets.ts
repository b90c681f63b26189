// A job's environment as a dataset of seeded batches (packages/envs).

import { arithmeticDataset, guessNumberDataset, type TaskDatasetOptions } from "@opentinker/envs";
import {
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

/** `allowedHosts`: this worker's allow-list for remote environments (its OPENTINKER_REMOTE_ENV_HOSTS). */
export function environmentDataset(
  env: EnvironmentRow,
  shape: TaskDatasetOptions,
  allowedHosts: readonly string[],
): RlDataset {
  if (env.kind === "REMOTE") {
    const url = env.url ?? "";
    // Checked again here: the allow-list may have changed since the environment was created.
    if (!isAllowedRemoteHost(url, allowedHosts))
      throw new RangeError(
        `remote environment ${url} is not on this worker's allow-list (OPENTINKER_REMOTE_ENV_HOSTS)`,
      );
    const { tokenizer: _tokenizer, ...rest } = shape;
    return remoteEnvDataset(url, { ...rest, config: (env.config ?? {}) as Record<string, unknown> });
  }
  const kind = ZBuiltinEnvironment.parse(env.builtin);
  const config: BuiltinEnvConfig = ZBuiltinEnvConfig.parse(env.config ?? {});
  const text = {
    ...(config.formatPenalty === undefined ? {} : { formatPenalty: config.formatPenalty }),
    ...(config.maxTokens === undefined ? {} : { maxTokens: config.maxTokens }),
  };
  if (kind === "arithmetic")
    return arithmeticDataset({
      ...shape,
      ...text,
      ...(config.maxOperand ? { maxOperand: config.maxOperand } : {}),
    });
  return guessNumberDataset({
    ...shape,
    ...text,
    ...(config.maxNumber ? { max: config.maxNumber } : {}),
    ...(config.maxGuesses ? { maxTurns: config.maxGuesses } : {}),
  });
}
