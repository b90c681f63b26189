import type { InProcessServiceClient } from "@opentinker/engine";
import { buildSftDatum, DivergedError, lossInput, modelInputTokens } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyService } from "../testing/index.ts";
import { type ChatTokenizer, conversationToDatum } from "./render.ts";
import { trainSft } from "./train.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
let tokenizer: ChatTokenizer;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
  tokenizer = service.base("tiny").tokenizer as ChatTokenizer;
});
afterAll(() => cleanup());

const conversation = [
  { role: "user" as const, content: "2+2?" },
  { role: "assistant" as const, content: "4" },
  { role: "user" as const, content: "3+3?" },
  { role: "assistant" as const, content: "6" },
];

describe("SFT", () => {
  it("weights only the assistant's tokens; user turns and the template are context", () => {
    const datum = conversationToDatum(tokenizer, conversation);
    const targets = lossInput(datum, "targetTokens");
    const weights = lossInput(datum, "weights");
    const weighted = targets.filter((_, i) => weights[i] === 1);
    // Each answer digit and its end-of-turn marker: "4<|im_end|>…" and "6<|im_end|>…".
    const text = weighted.map((t) => String.fromCharCode(t)).join("");
    expect(text.startsWith("4")).toBe(true);
    expect(text).toContain("6");
    expect(weighted).not.toContain(50); // the "2" of the user's question is context
    expect(modelInputTokens(datum.modelInput).length).toBe(targets.length);
  });

  it("a conversation without an assistant message is refused", () => {
    expect(() => conversationToDatum(tokenizer, [{ role: "user", content: "hi" }])).toThrow(
      /no assistant message/,
    );
  });

  it("trainSft lowers the loss on its conversations and publishes a snapshot", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 8, seed: 1 });
    const data = [conversationToDatum(tokenizer, conversation)];
    const { history, handle } = await trainSft({
      trainingClient: tc,
      data,
      epochs: 15,
      adam: { learningRate: 2e-2 },
      validation: data,
    });
    expect(history).toHaveLength(15);
    expect(history[14]?.["val/loss/mean"]).toBeLessThan((history[0]?.["loss/mean"] as number) * 0.7);
    expect(handle).toMatch(/^opentinker:\/\/sdk\/adapter-\d+\/sampler\/1$/);
  });

  it("trainSft ends as diverged at the step whose loss is non-finite, having stored the steps before it", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 8, seed: 1 });
    const good = conversationToDatum(tokenizer, conversation);
    // A weight finite as a double but Infinity as float32: the step's loss is non-finite.
    const bad = buildSftDatum({ sequence: [10, 20, 30, 40], weights: [0, 1e39, 1e39, 1e39] });
    const stored: number[] = [];
    const run = trainSft({
      trainingClient: tc,
      data: [good, good, bad, good],
      batchSize: 1,
      adam: { learningRate: 1 },
      onStep: async (record) => void stored.push(record.step),
    });
    await expect(run).rejects.toThrow(DivergedError);
    await expect(run).rejects.toThrow(/^diverged at step 2: forwardBackward: non-finite loss at data\[0\]/);
    expect(stored).toEqual([0, 1]);
  });
});
