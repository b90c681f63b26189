import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadBaseModel } from "@opentinker/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHAPES_VL_TINY } from "../vl-recipes.ts";
import { buildVlModel, type VlModelRecipe, vlModelConfig } from "./build-vl-model.ts";

// The built-in recipe, shrunk so a build takes a second or two.
const SMALL: VlModelRecipe = {
  ...SHAPES_VL_TINY,
  name: "vl-small",
  shape: { ...SHAPES_VL_TINY.shape, hiddenSize: 16, intermediateSize: 32, numLayers: 1 },
  tokenizer: { ...SHAPES_VL_TINY.tokenizer, corpus: { ...SHAPES_VL_TINY.corpus, episodes: 40 } },
  corpus: { ...SHAPES_VL_TINY.corpus, episodes: 40 },
  pretrain: { ...SHAPES_VL_TINY.pretrain, steps: 3, batchSize: 8, warmupSteps: 1 },
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-build-vl-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("building a vision-language model", () => {
  it("is deterministic: two builds of one recipe give byte-identical files", async () => {
    const a = await buildVlModel(SMALL, path.join(dir, "a"));
    const b = await buildVlModel(SMALL, path.join(dir, "b"));
    expect(b.checksums.files).toEqual(a.checksums.files);
    const other = await buildVlModel({ ...SMALL, initSeed: SMALL.initSeed + 1 }, path.join(dir, "c"));
    expect(other.checksums.files["model.safetensors"]).not.toBe(a.checksums.files["model.safetensors"]);
  }, 60_000);

  it("writes a directory loadBaseModel reads as a vision-language model, the placeholder in its tokenizer", async () => {
    const base = await loadBaseModel(path.join(dir, "a"), "vl-small");
    const vision = base.config.vision;
    expect(vision).toMatchObject({ imageSize: 32, patchSize: 8, numChannels: 3 });
    expect(base.tokenizer?.tokenId("<|image|>")).toBe(vision?.imageTokenId);
    expect(base.weights.vision?.posEmbed.length).toBe(16 * 16);
  });

  it("refuses a recipe whose images do not match the environment's", () => {
    const ids = { size: 300, endOfText: 296, imEnd: 298, image: 299 };
    expect(() => vlModelConfig({ ...SMALL, vision: { ...SMALL.vision, patchSize: 4 } }, ids)).toThrow(
      /renders 32×32 images as 16 tokens, but the model takes 32×32 images as 64/,
    );
  });
});
