import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { ShapesEnv, type ShapesTask } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { CHECKSUMS_FILE, compareChecksums, readChecksums } from "./build/checksums.ts";
import { builtInModel, DEFAULT_VL_MODEL } from "./registry.ts";
import { VL_RECIPES } from "./vl-recipes.ts";

const vl = builtInModel(DEFAULT_VL_MODEL);

describe("the built-in vision-language model", () => {
  it("every committed file matches its recorded sha256, and checksums.json covers every file", async () => {
    const recorded = await readChecksums(vl.dir);
    expect(await compareChecksums(vl.dir, recorded.files)).toEqual([]);
    const files = (await readdir(vl.dir)).filter((f) => f !== CHECKSUMS_FILE).sort();
    expect(Object.keys(recorded.files).sort()).toEqual(files);
    expect(files).toEqual(["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]);
  });

  it("was built from the recipe in vl-recipes.ts (a changed recipe needs a rebuild)", async () => {
    const recorded = await readChecksums(vl.dir);
    const recipe = Object.values(VL_RECIPES).find((r) => r.name === vl.name);
    expect(recorded.recipe).toEqual(JSON.parse(JSON.stringify(recipe)));
  });

  it("loads like any Hugging Face model and answers a shapes prompt (image + question) with a shape's name", async () => {
    expect(vl.kind).toBe("vision-language");
    const base = await loadBaseModel(vl.dir, vl.name);
    // The environment's default picture: 32×32 pixels as 16 soft tokens.
    expect(base.config.vision).toMatchObject({ imageSize: 32, patchSize: 8, numChannels: 3 });
    expect(base.tokenizer?.tokenId("<|image|>")).toBe(base.config.vision?.imageTokenId);
    const task: ShapesTask = {
      question: "name",
      answer: "square",
      shapes: [{ kind: "square", cx: 16, cy: 16, r: 8, color: [40, 120, 200] }],
    };
    const env = new ShapesEnv(task, base.tokenizer as RendererTokenizer);
    const { observation, stop } = await env.initialObservation();
    const scratch = await mkdtemp(path.join(tmpdir(), "ot-models-vl-"));
    try {
      const service = InProcessServiceClient.local([base], scratch, "models");
      const sampler = await service.createSamplingClient({ baseModel: base.name });
      const response = await (
        await sampler.sample(observation, 1, { temperature: 0, stop: stop.stop, maxTokens: stop.maxTokens })
      ).result();
      const result = await env.step(response.sequences[0]?.tokens ?? []);
      // Right or wrong, the answer is well-formed: no format penalty.
      expect(result.metrics?.["format/malformed"]).toBe(0);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
