import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { ArithmeticEnv, CalculatorEnv, parseCall } from "@opentinker/envs";
import { modelInputTokens } from "@opentinker/protocol";
import { ChatRenderer, type RendererTokenizer } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { CHECKSUMS_FILE, compareChecksums, readChecksums } from "./build/checksums.ts";
import { TEXT_RECIPES } from "./recipes.ts";
import { BUILT_IN_MODELS, builtInModel, DEFAULT_TEXT_MODEL, TOOL_MODEL } from "./registry.ts";

const text = builtInModel(DEFAULT_TEXT_MODEL);

describe.each(Object.values(TEXT_RECIPES).map((r) => [r.name, builtInModel(r.name)] as const))(
  "the built-in text model %s",
  (name, model) => {
    it("every committed file matches its recorded sha256, and checksums.json covers every file", async () => {
      const recorded = await readChecksums(model.dir);
      expect(await compareChecksums(model.dir, recorded.files)).toEqual([]);
      const files = (await readdir(model.dir)).filter((f) => f !== CHECKSUMS_FILE).sort();
      expect(Object.keys(recorded.files).sort()).toEqual(files);
      expect(files).toEqual(["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]);
    });

    it("was built from the recipe in recipes.ts (a changed recipe needs a rebuild)", async () => {
      const recorded = await readChecksums(model.dir);
      const recipe = Object.values(TEXT_RECIPES).find((r) => r.name === name);
      expect(recorded.recipe).toEqual(JSON.parse(JSON.stringify(recipe)));
    });
  },
);

describe("the built-in text model", () => {
  it("loads like any Hugging Face model and answers an arithmetic prompt with a well-formed number", async () => {
    const base = await loadBaseModel(text.dir, text.name);
    const tokenizer = base.tokenizer as RendererTokenizer;
    const env = new ArithmeticEnv({ a: 3, b: 4, op: "+", answer: 7 }, tokenizer);
    const { observation, stop } = await env.initialObservation();
    // Short prompts are the tokenizer's job: the fixed phrases are single tokens.
    expect(modelInputTokens(observation).length).toBeLessThanOrEqual(24);
    const scratch = await mkdtemp(path.join(tmpdir(), "ot-models-"));
    try {
      const service = InProcessServiceClient.local([base], scratch, "models");
      const sampler = await service.createSamplingClient({ baseModel: base.name });
      const response = await (
        await sampler.sample(observation, 1, { temperature: 0, stop: stop.stop, maxTokens: stop.maxTokens })
      ).result();
      const action = response.sequences[0]?.tokens ?? [];
      const { text: answer, complete } = new ChatRenderer(tokenizer).parse(action);
      expect(complete).toBe(true);
      expect(answer.trim()).toMatch(/^-?\d+$/);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it("the tool model writes a well-formed calculator call or answer to a large problem", async () => {
    const tool = builtInModel(TOOL_MODEL);
    const base = await loadBaseModel(tool.dir, tool.name);
    const tokenizer = base.tokenizer as RendererTokenizer;
    const env = new CalculatorEnv({ a: 47, b: 58, op: "*", answer: 2726, size: "large" }, tokenizer);
    const { observation, stop } = await env.initialObservation();
    const scratch = await mkdtemp(path.join(tmpdir(), "ot-models-"));
    try {
      const service = InProcessServiceClient.local([base], scratch, "models");
      const sampler = await service.createSamplingClient({ baseModel: base.name });
      const response = await (
        await sampler.sample(observation, 8, {
          temperature: 1,
          seed: 1,
          stop: stop.stop,
          maxTokens: stop.maxTokens,
        })
      ).result();
      const renderer = new ChatRenderer(tokenizer);
      const texts = response.sequences.map((s) => renderer.parse(s.tokens));
      const wellFormed = texts.filter(
        (t) => t.complete && (parseCall(t.text) !== null || /^-?\d+$/.test(t.text)),
      );
      expect(wellFormed.length).toBeGreaterThanOrEqual(7);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it("the registry names every built-in model once, each in its own directory", () => {
    const names = BUILT_IN_MODELS.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(BUILT_IN_MODELS.map((m) => m.dir)).size).toBe(names.length);
    expect(() => builtInModel("gpt-5")).toThrow(/unknown built-in model "gpt-5"/);
  });
});
