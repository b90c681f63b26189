// What the text environments share: a chat renderer for prompts and parsing,
// and the format penalty for an action that is not a well-formed answer.
import type { ModelInput } from "@opentinker/protocol";
import { ChatRenderer, type RendererTokenizer, type StopCondition } from "@opentinker/sdk";

export interface TextEnvOptions {
  /** Reward for a malformed action (no end of turn, or not a number). */
  formatPenalty?: number;
  maxTokens?: number;
}

export const DEFAULT_FORMAT_PENALTY = -0.1;

export function rendererFor(tokenizer: RendererTokenizer, options: TextEnvOptions): ChatRenderer {
  return new ChatRenderer(tokenizer, { maxTokens: options.maxTokens ?? 8 });
}

/** An integer answer, or null when the action is malformed. */
export function parseInteger(renderer: ChatRenderer, action: readonly number[]): number | null {
  const { text, complete } = renderer.parse(action);
  const trimmed = text.trim();
  if (!complete || !/^-?\d{1,9}$/.test(trimmed)) return null;
  return Number(trimmed);
}

export interface Prompted {
  observation: ModelInput;
  stop: StopCondition;
}
