// The config form of each built-in environment: which fields it takes, what to
// call them, their bounds and their defaults, read from the protocol
// (ZBuiltinEnvConfig, BUILTIN_CONFIG_FIELDS, BUILTIN_CONFIG_DEFAULTS) so the
// form and the server agree.
import {
  BUILTIN_CONFIG_FIELDS,
  BUILTIN_DESCRIPTIONS,
  BUILTIN_ENVIRONMENTS,
  type BuiltinEnvConfigKey,
  builtinConfigDefault,
  NIM_OPPONENTS,
  ZBuiltinEnvConfig,
  type ZBuiltinEnvironment,
} from "@opentinker/protocol";
import { z } from "zod";
import type { Choice } from "../shared/fields.tsx";
import { optionalNumberText } from "../shared/forms.ts";

export type BuiltinEnvironment = z.infer<typeof ZBuiltinEnvironment>;
export type ConfigKey = BuiltinEnvConfigKey;

export const BUILTIN_LABEL: Record<BuiltinEnvironment, string> = {
  arithmetic: "Arithmetic",
  "guess-number": "Guess the number",
  nim: "Nim (two players)",
  shapes: "Shapes (image + text)",
  calculator: "Calculator (tool use)",
};

/** What each built-in is, and what its jobs need. */
export const BUILTIN_ABOUT: Record<BuiltinEnvironment, string> = BUILTIN_DESCRIPTIONS;

export const CONFIG_FIELDS: Record<BuiltinEnvironment, ConfigKey[]> = BUILTIN_CONFIG_FIELDS;

export const CONFIG_LABEL: Record<ConfigKey, { label: string; about: string }> = {
  maxOperand: { label: "Max operand", about: "Operands are drawn from 0 to this" },
  maxNumber: { label: "Max number", about: "The secret is between 1 and this" },
  maxGuesses: { label: "Max guesses", about: "Turns before the episode ends" },
  formatPenalty: { label: "Format penalty", about: "Reward for an answer in the wrong format" },
  maxTokens: { label: "Max tokens", about: "Tokens the model may write per turn" },
  opponent: {
    label: "Opponent",
    about: "Who the learner plays in training; validation plays the random player unless optimal is chosen",
  },
  illegalPenalty: { label: "Illegal-move penalty", about: "Reward for an illegal move (a loss is −1)" },
  lenient: {
    label: "Lenient moves",
    about: "Any token counts as a move (for a model that rarely writes digits)",
  },
  callCost: { label: "Call cost", about: "Taken from the reward for each calculator call" },
  maxCalls: { label: "Max calls", about: "Calculator calls before the model must answer" },
};

const OPPONENT_LABEL: Record<(typeof NIM_OPPONENTS)[number], string> = {
  "self-play": "Self-play",
  random: "Random player",
  optimal: "Optimal player",
};

/** Fields chosen from a list (the rest are numbers typed as text), each with how its value is sent. */
const CHOICE_FIELDS = {
  opponent: {
    choices: NIM_OPPONENTS.map((value) => ({ value, label: OPPONENT_LABEL[value] })),
    value: (text: string): string => text,
  },
  lenient: {
    choices: [
      { value: "true", label: "Yes" },
      { value: "false", label: "No" },
    ],
    value: (text: string): boolean => text === "true",
  },
} satisfies Partial<Record<ConfigKey, { choices: Choice[]; value: (text: string) => unknown }>>;

type ChoiceKey = keyof typeof CHOICE_FIELDS;
type NumberKey = Exclude<ConfigKey, ChoiceKey>;

export function isChoiceField(key: ConfigKey): key is ChoiceKey {
  return key in CHOICE_FIELDS;
}

export function choicesOf(key: ChoiceKey): readonly Choice[] {
  return CHOICE_FIELDS[key].choices;
}

/** A field's value as the dashboard shows it: "12", "No", "Optimal player". */
export function describeValue(key: ConfigKey, value: unknown): string {
  if (!isChoiceField(key)) return String(value);
  return choicesOf(key).find((c) => c.value === String(value))?.label ?? String(value);
}

/** A field's default for this built-in, as the form shows it. */
export function describeDefault(builtin: BuiltinEnvironment, key: ConfigKey): string {
  return describeValue(key, builtinConfigDefault(builtin, key));
}

/** A number field's default, for its placeholder (none where the default is not one number). */
export function defaultPlaceholder(builtin: BuiltinEnvironment, key: ConfigKey): string | undefined {
  const value = builtinConfigDefault(builtin, key);
  return typeof value === "number" ? String(value) : undefined;
}

function bounds(key: NumberKey) {
  const number = ZBuiltinEnvConfig.shape[key].unwrap();
  return { integer: number.isInt, min: number.minValue, max: number.maxValue };
}

/** "1 to 64", "a whole number ≥ 1", "any number". */
export function describeBounds(key: NumberKey): string {
  const { integer, min, max } = bounds(key);
  const finite = (n: number | null): n is number => n !== null && Number.isFinite(n);
  const kind = integer ? "a whole number" : "a number";
  if (finite(min) && finite(max)) return `${min} to ${max}`;
  if (finite(min)) return `${kind} ≥ ${min}`;
  if (finite(max)) return `${kind} ≤ ${max}`;
  return kind;
}

/** A field's hint: what it does, its bounds (numbers) and its default for this built-in. */
export function fieldHint(builtin: BuiltinEnvironment, key: ConfigKey): string {
  const range = isChoiceField(key) ? "" : `${describeBounds(key)}; `;
  return `${CONFIG_LABEL[key].about} (${range}default: ${describeDefault(builtin, key)})`;
}

/** An empty choice is "not set" (the environment's default). */
function choiceText(key: ChoiceKey) {
  return z
    .string()
    .optional()
    .transform((s) => (s ? CHOICE_FIELDS[key].value(s) : undefined));
}

/** The fields of one built-in's config, each optional (empty: the environment's default). */
export function configSchema(builtin: BuiltinEnvironment) {
  return z.object(
    Object.fromEntries(
      CONFIG_FIELDS[builtin].map((key) => [
        key,
        isChoiceField(key) ? choiceText(key) : optionalNumberText(bounds(key)),
      ]),
    ),
  );
}

export function isConfigKey(value: string): value is ConfigKey {
  return Object.hasOwn(CONFIG_LABEL, value);
}

export function isBuiltin(value: string): value is BuiltinEnvironment {
  return (BUILTIN_ENVIRONMENTS as readonly string[]).includes(value);
}

export { BUILTIN_ENVIRONMENTS };
