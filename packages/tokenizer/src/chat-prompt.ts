// A conversation as the prompt for the assistant's next turn: the one way every
// sampling client (the SDK's chat renderer, the dashboard's playground) renders it.
import type { ChatMessage, TextTokenizer } from "./tokenizer.ts";

/**
 * The chat template rendered with the generation prompt, tokenized without
 * adding special tokens again (the template writes its own).
 */
export function chatPromptTokens(
  tokenizer: Pick<TextTokenizer, "encode" | "applyChatTemplate">,
  messages: readonly ChatMessage[],
): number[] {
  const text = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true });
  return tokenizer.encode(text, { addSpecialTokens: false });
}
