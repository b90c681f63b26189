// Conversations → SFT datums (C6): the chat template renders the text; only the
// assistant's messages carry weight, everything else is context.
import { buildSftDatum, type Datum } from "@opentinker/protocol";

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

/** What rendering needs from a tokenizer (the engine's TextTokenizer has it). */
export interface ChatTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  applyChatTemplate(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): string;
}

/**
 * Tokens of the whole conversation with weight 1 on each assistant message's
 * tokens (the span its turn adds after the generation prompt) and 0 elsewhere.
 */
export function conversationToDatum(tokenizer: ChatTokenizer, messages: ChatMessage[]): Datum {
  if (!messages.some((m) => m.role === "assistant")) {
    throw new RangeError("conversationToDatum: the conversation has no assistant message to learn from");
  }
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });
  const full = encode(tokenizer.applyChatTemplate(messages));
  const weights = new Array<number>(full.length).fill(0);
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const before = encode(tokenizer.applyChatTemplate(messages.slice(0, i), { addGenerationPrompt: true }));
    const through = encode(tokenizer.applyChatTemplate(messages.slice(0, i + 1)));
    if (!before.every((t, k) => full[k] === t) || !through.every((t, k) => full[k] === t)) {
      throw new Error(`conversationToDatum: message ${i} does not render as a prefix of the conversation`);
    }
    for (let k = before.length; k < through.length; k++) weights[k] = 1;
  });
  return buildSftDatum({ sequence: full, weights });
}
