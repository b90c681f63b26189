import type { InProcessServiceClient } from "@opentinker/engine";
import { modelInputTokens } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyService } from "../testing/index.ts";
import { ChatRenderer, type RendererTokenizer } from "./chat-renderer.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
let tokenizer: RendererTokenizer;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
  tokenizer = service.base("tiny").tokenizer as RendererTokenizer;
});
afterAll(() => cleanup());

describe("ChatRenderer", () => {
  it("renders the chat template with the generation prompt, stops on the end-of-turn id, parses the action", () => {
    const r = new ChatRenderer(tokenizer, { maxTokens: 16 });
    const prompt = r.prompt([{ role: "user", content: "2+2?" }]);
    const text = tokenizer.decode(modelInputTokens(prompt));
    expect(text).toBe("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
    const end = tokenizer.tokenId("<|im_end|>") as number;
    expect(r.stop()).toEqual({ stop: [end], maxTokens: 16 });
    expect(r.parse([52, end])).toEqual({ text: "4", complete: true });
    expect(r.parse([52, 53])).toEqual({ text: "45", complete: false });
  });

  it("refuses a tokenizer without the end-of-turn token", () => {
    expect(() => new ChatRenderer(tokenizer, { endOfTurn: "<|eot_id|>" })).toThrow(/no end-of-turn token/);
  });
});
