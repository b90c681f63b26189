// A renderer turns a conversation into what the sampler needs and back: prompt
// tokens through the model's chat template, the stop sequences that end an
// assistant turn, and the action text parsed out of generated tokens.
import { type ModelInput, modelInputFromTokens } from "@opentinker/protocol";
import { chatPromptTokens } from "@opentinker/tokenizer";
import type { StopCondition } from "../env/types.ts";
import type { ChatMessage, ChatTokenizer } from "../sft/render.ts";

export interface RendererTokenizer extends ChatTokenizer {
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  tokenId(token: string): number | undefined;
}

export interface ChatRendererOptions {
  /** The token that ends an assistant turn (ChatML: "<|im_end|>"). */
  endOfTurn?: string;
  maxTokens?: number;
}

export class ChatRenderer {
  private readonly endOfTurn: string;
  private readonly maxTokens: number;

  constructor(
    private readonly tokenizer: RendererTokenizer,
    options: ChatRendererOptions = {},
  ) {
    this.endOfTurn = options.endOfTurn ?? "<|im_end|>";
    this.maxTokens = options.maxTokens ?? 64;
    if (this.tokenizer.tokenId(this.endOfTurn) === undefined) {
      throw new RangeError(`ChatRenderer: the tokenizer has no end-of-turn token "${this.endOfTurn}"`);
    }
  }

  /** The conversation so far, ending with the prompt for the assistant's next turn. */
  prompt(messages: ChatMessage[]): ModelInput {
    return modelInputFromTokens(chatPromptTokens(this.tokenizer, messages));
  }

  /** Generation ends at the end-of-turn token (by id, so it cannot be split). */
  stop(): StopCondition {
    return { stop: [this.tokenizer.tokenId(this.endOfTurn) as number], maxTokens: this.maxTokens };
  }

  /** The assistant's text: the generated tokens without the end-of-turn marker. */
  parse(action: readonly number[]): { text: string; complete: boolean } {
    const end = this.tokenizer.tokenId(this.endOfTurn) as number;
    const at = action.indexOf(end);
    const body = at >= 0 ? action.slice(0, at) : action;
    return { text: this.tokenizer.decode(body, { skipSpecialTokens: true }), complete: at >= 0 };
  }
}
