// The playground's form as data: the settings as typed, the chosen policy and
// prompt, and how they become a `playground.sample` call, checked by the
// protocol's own schema (so the API's defaults and bounds have one home).
import { type PlaygroundSampleRequest, type PolicyRef, ZPlaygroundSampleRequest } from "@opentinker/protocol";
import { formatNumber } from "../jobs/metric-table.ts";
import { type FormErrors, issueText } from "../shared/forms.ts";

export type PromptMode = "text" | "chat";
export type ChatRole = "system" | "user" | "assistant";

export interface ChatTurn {
  role: ChatRole;
  content: string;
}

/** The sampling settings as typed; a blank optional field takes the API's default. */
export interface SettingsText {
  maxTokens: string;
  temperature: string;
  topK: string;
  topP: string;
  seed: string;
  numSamples: string;
}

export type SettingName = keyof SettingsText;

/** The API's defaults, read from its schema: what a call that leaves a setting out gets. */
const API_DEFAULTS = ZPlaygroundSampleRequest.parse({
  policy: { baseModel: "-" },
  prompt: { mode: "text", text: "-" },
  params: { maxTokens: 1 },
});

export const DEFAULT_SETTINGS = {
  temperature: API_DEFAULTS.params.temperature,
  topK: API_DEFAULTS.params.topK,
  topP: API_DEFAULTS.params.topP,
  numSamples: API_DEFAULTS.numSamples,
} as const;

/**
 * Where the form starts: the API's defaults, no seed (a fresh draw each time),
 * and a short completion (max tokens has no default in the API).
 */
export const INITIAL_SETTINGS: SettingsText = {
  maxTokens: "32",
  temperature: String(DEFAULT_SETTINGS.temperature),
  topK: String(DEFAULT_SETTINGS.topK),
  topP: String(DEFAULT_SETTINGS.topP),
  seed: "",
  numSamples: String(DEFAULT_SETTINGS.numSamples),
};

export interface PlaygroundForm {
  /** Null until a model (or a published version of an adapter) is chosen. */
  policy: PolicyRef | null;
  mode: PromptMode;
  text: string;
  messages: readonly ChatTurn[];
  settings: SettingsText;
}

export type Verdict = { ok: true; request: PlaygroundSampleRequest } | { ok: false; errors: FormErrors };

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/** Which field shows an issue at a request path. */
function fieldOf(path: readonly PropertyKey[]): string {
  const [top, next] = path.map(String);
  if (top === "params" || top === "prompt") return next ?? top;
  return top ?? "policy";
}

/** The form as a call's input, or the errors by field ("text", "messages", a setting's name, "policy"). */
export function validatePlayground(form: PlaygroundForm): Verdict {
  const errors: FormErrors = {};
  const number = (field: SettingName): number | undefined => {
    const text = form.settings[field].trim();
    if (text === "") return undefined;
    if (NUMBER.test(text)) return Number(text);
    errors[field] = "Enter a number";
    return undefined;
  };
  if (!form.policy) errors.policy = "Choose a base model, or an adapter with a published version";
  const seed = number("seed");
  const request = {
    policy: form.policy ?? { baseModel: "" },
    prompt:
      form.mode === "text"
        ? { mode: "text" as const, text: form.text }
        : { mode: "chat" as const, messages: form.messages.map((m) => ({ ...m })) },
    numSamples: number("numSamples"),
    params: {
      maxTokens: number("maxTokens"),
      temperature: number("temperature"),
      topK: number("topK"),
      topP: number("topP"),
      ...(seed === undefined ? {} : { seed }),
    },
  };
  const parsed = ZPlaygroundSampleRequest.safeParse(request, { reportInput: true });
  if (!parsed.success)
    for (const issue of parsed.error.issues) {
      const field = fieldOf(issue.path);
      // A field keeps its first complaint ("Enter a number" over the schema's "Required").
      errors[field] ??= issueText(issue);
    }
  if (Object.keys(errors).length > 0 || !parsed.success) return { ok: false, errors };
  return { ok: true, request: parsed.data };
}

/** How likely a sampled token was, in four bands for colouring. */
export type ProbabilityBand = "likely" | "plausible" | "unlikely" | "rare";

export function probabilityBand(logprob: number): ProbabilityBand {
  const p = Math.exp(logprob);
  if (p >= 0.5) return "likely";
  if (p >= 0.2) return "plausible";
  if (p >= 0.05) return "unlikely";
  return "rare";
}

/** What hovering a token says: its id, its logprob and the probability that is. */
export function tokenTitle(token: { id: number; logprob: number }): string {
  return `token ${token.id} · logprob ${formatNumber(token.logprob)} · p ${formatNumber(Math.exp(token.logprob))}`;
}
