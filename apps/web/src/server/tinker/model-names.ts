// Base-model names as Tinker clients write them (`Qwen/Qwen3-8B`), mapped to
// the base models this service has registered. The map is configuration
// (OPENTINKER_TINKER_MODELS, a JSON object of Tinker name → our name); our own
// names are accepted as they are.
import { z } from "zod";

export const ZTinkerModelAliases = z.record(z.string().min(1), z.string().min(1));
export type TinkerModelAliases = z.infer<typeof ZTinkerModelAliases>;

/** Parses the setting's JSON text; empty means no aliases. */
export function parseTinkerModelAliases(text: string): TinkerModelAliases {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`OPENTINKER_TINKER_MODELS: not JSON: ${(error as Error).message}`);
  }
  const parsed = ZTinkerModelAliases.safeParse(value);
  if (!parsed.success)
    throw new Error('OPENTINKER_TINKER_MODELS: expected {"<tinker name>": "<base model>"}');
  return parsed.data;
}

/** The registered base model a Tinker name stands for, or null. */
export function resolveBaseModelName(
  name: string,
  aliases: TinkerModelAliases,
  served: readonly string[],
): string | null {
  const ours = aliases[name] ?? name;
  return served.includes(ours) ? ours : null;
}

/** Every name a Tinker client may use: the aliases of served models, then our own names. */
export function servedNames(aliases: TinkerModelAliases, served: readonly string[]): string[] {
  const aliased = Object.entries(aliases)
    .filter(([, ours]) => served.includes(ours))
    .map(([tinker]) => tinker);
  return [...aliased, ...served];
}
