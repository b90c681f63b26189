import { describe, expect, it } from "vitest";
import {
  DEFAULT_SETTINGS,
  INITIAL_SETTINGS,
  type PlaygroundForm,
  probabilityBand,
  tokenTitle,
  validatePlayground,
} from "./playground-model.ts";

const form = (change: Partial<PlaygroundForm> = {}): PlaygroundForm => ({
  policy: { baseModel: "tiny-random" },
  mode: "text",
  text: "Once upon a time",
  messages: [{ role: "user", content: "hi" }],
  settings: INITIAL_SETTINGS,
  ...change,
});

describe("the playground form", () => {
  it("starts from the API's own defaults and sends them as the API reads them", () => {
    expect(DEFAULT_SETTINGS).toEqual({ temperature: 1, topK: -1, topP: 1, numSamples: 1 });
    const verdict = validatePlayground(form());
    expect(verdict).toMatchObject({
      ok: true,
      request: {
        policy: { baseModel: "tiny-random" },
        prompt: { mode: "text", text: "Once upon a time" },
        numSamples: 1,
        params: { maxTokens: 32, temperature: 1, topK: -1, topP: 1 },
      },
    });
    expect(verdict.ok && "seed" in verdict.request.params).toBe(false);
  });

  it("puts each bad setting's error on its own field, in words", () => {
    const verdict = validatePlayground(
      form({
        settings: {
          ...INITIAL_SETTINGS,
          maxTokens: "0",
          topP: "1.5",
          temperature: "hot",
          seed: "1.5",
          numSamples: "",
        },
      }),
    );
    expect(verdict).toEqual({
      ok: false,
      errors: {
        maxTokens: "Must be more than 0",
        topP: "Must be at most 1",
        temperature: "Enter a number",
        seed: "Enter a whole number",
      },
    });
  });

  it("asks for a policy and a prompt, and sends a chat's messages as typed", () => {
    expect(validatePlayground(form({ policy: null, text: "" }))).toMatchObject({
      ok: false,
      errors: { policy: expect.stringMatching(/Choose/), text: "type a prompt" },
    });
    expect(validatePlayground(form({ mode: "chat", messages: [] }))).toMatchObject({
      ok: false,
      errors: { messages: "add at least one message" },
    });
    const chat = validatePlayground(
      form({ mode: "chat", messages: [{ role: "system", content: "Be brief." }] }),
    );
    expect(chat).toMatchObject({
      ok: true,
      request: { prompt: { mode: "chat", messages: [{ role: "system", content: "Be brief." }] } },
    });
  });

  it("colours a token by its probability and titles it with its id and logprob", () => {
    expect([Math.log(0.9), Math.log(0.3), Math.log(0.1), Math.log(0.01)].map(probabilityBand)).toEqual([
      "likely",
      "plausible",
      "unlikely",
      "rare",
    ]);
    expect(tokenTitle({ id: 42, logprob: -0.5 })).toBe("token 42 · logprob -0.5 · p 0.6065");
  });
});
