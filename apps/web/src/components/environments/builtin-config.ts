// The config form of each built-in environment: which fields it takes, what to
// call them, and their bounds, read from the protocol's ZBuiltinEnvConfig so the
// form and the server agree.
import { BUILTIN_ENVIRONMENTS, ZBuiltinEnvConfig, type ZBuiltinEnvironment } from "@opentinker/protocol";
import { z } from "zod";
import { optionalNumberText } from "../shared/forms.ts";

export type BuiltinEnvironment = z.infer<typeof ZBuiltinEnvironment>;
export type ConfigKey = keyof typeof ZBuiltinEnvConfig.shape;

export const BUILTIN_LABEL: Record<BuiltinEnvironment, string> = {
  arithmetic: "Arithmetic",
  "guess-number": "Guess the number",
};

export const CONFIG_FIELDS: Record<BuiltinEnvironment, ConfigKey[]> = {
  arithmetic: ["maxOperand", "formatPenalty", "maxTokens"],
  "guess-number": ["maxNumber", "maxGuesses", "formatPenalty", "maxTokens"],
};

export const CONFIG_LABEL: Record<ConfigKey, { label: string; about: string }> = {
  maxOperand: { label: "Max operand", about: "Operands are drawn from 0 to this" },
  maxNumber: { label: "Max number", about: "The secret is between 1 and this" },
  maxGuesses: { label: "Max guesses", about: "Turns before the episode ends" },
  formatPenalty: { label: "Format penalty", about: "Reward for an answer in the wrong format" },
  maxTokens: { label: "Max tokens", about: "Tokens the model may write per turn" },
};

function bounds(key: ConfigKey) {
  const number = ZBuiltinEnvConfig.shape[key].unwrap();
  return { integer: number.isInt, min: number.minValue, max: number.maxValue };
}

/** "1 to 64", "a whole number ≥ 1", "any number". */
export function describeBounds(key: ConfigKey): string {
  const { integer, min, max } = bounds(key);
  const finite = (n: number | null): n is number => n !== null && Number.isFinite(n);
  const kind = integer ? "a whole number" : "a number";
  if (finite(min) && finite(max)) return `${min} to ${max}`;
  if (finite(min)) return `${kind} ≥ ${min}`;
  if (finite(max)) return `${kind} ≤ ${max}`;
  return kind;
}

/** The text fields of one built-in's config, each optional (empty: the environment's default). */
export function configSchema(builtin: BuiltinEnvironment) {
  return z.object(
    Object.fromEntries(CONFIG_FIELDS[builtin].map((key) => [key, optionalNumberText(bounds(key))])),
  );
}

export function isBuiltin(value: string): value is BuiltinEnvironment {
  return (BUILTIN_ENVIRONMENTS as readonly string[]).includes(value);
}

export { BUILTIN_ENVIRONMENTS };
