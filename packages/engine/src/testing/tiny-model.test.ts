import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { parseModelConfig } from "../model/config.ts";
import { loadHfModel } from "../model/hf-model.ts";
import { widenWeight } from "../model/weight-dtype.ts";
import { tempDir } from "./temp-dir.ts";
import { writeTinyModel } from "./tiny-model.ts";

describe("writeTinyModel", () => {
  test("the same seed writes byte-identical files", async () => {
    const options = { architecture: "qwen2" as const, dtype: "F16" as const, shards: 2, seed: 7 };
    const a = await writeTinyModel(await tempDir(), options);
    const b = await writeTinyModel(await tempDir(), options);
    expect(a.files.map((f) => f.sha256)).toEqual(b.files.map((f) => f.sha256));
  });

  test("a different seed gives different weights", async () => {
    const a = await writeTinyModel(await tempDir(), { seed: 1 });
    const b = await writeTinyModel(await tempDir(), { seed: 2 });
    expect(a.weights.embedTokens).not.toEqual(b.weights.embedTokens);
  });

  test("weights have the requested small scale and norms start near one", async () => {
    const { weights } = await writeTinyModel(await tempDir(), { scale: 0.02 });
    const embed = widenWeight(weights.embedTokens);
    const std = Math.sqrt(embed.reduce((sum, v) => sum + v * v, 0) / embed.length);
    expect(std).toBeGreaterThan(0.015);
    expect(std).toBeLessThan(0.025);
    expect(weights.norm.every((v) => Math.abs(v - 1) < 0.2)).toBe(true);
  });

  test("config.json is a valid HF config with the requested shape", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, {
      architecture: "llama",
      hiddenSize: 48,
      numLayers: 3,
      numHeads: 6,
      numKvHeads: 3,
      intermediateSize: 80,
      tieWordEmbeddings: false,
      dtype: "BF16",
    });
    const config = parseModelConfig(JSON.parse(await readFile(join(dir, "config.json"), "utf8")));
    expect(config).toEqual(tiny.config);
    expect(config).toMatchObject({ hiddenSize: 48, numLayers: 3, numHeads: 6, numKvHeads: 3, headDim: 8 });
    expect(config).toMatchObject({ intermediateSize: 80, tieWordEmbeddings: false, torchDtype: "bfloat16" });
  });

  test("a vocabulary smaller than the tokenizer is refused", async () => {
    await expect(writeTinyModel(await tempDir(), { vocabSize: 10 })).rejects.toThrow(/vocabSize 10 is below/);
  });

  test("a vision part: config keys, random visual.* tensors, and <|image|> in the tokenizer", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, {
      hiddenSize: 16,
      numHeads: 2,
      shards: 2,
      vision: { imageSize: 8, patchSize: 4 },
    });
    const imageId = tiny.tokenizer.ids.image as number;
    expect(imageId).toBe(tiny.tokenizer.size - 1);
    expect(tiny.config.vision).toEqual({ imageSize: 8, patchSize: 4, numChannels: 3, imageTokenId: imageId });
    const json = JSON.parse(await readFile(join(dir, "config.json"), "utf8"));
    expect(json).toMatchObject({
      vision_config: { image_size: 8, patch_size: 4, num_channels: 3 },
      image_token_id: imageId,
    });
    const loaded = await loadHfModel(dir);
    expect(loaded.weights.vision?.patchProj).toHaveLength(16 * 48);
    expect(loaded.weights.vision?.posEmbed).toHaveLength(4 * 16);
    expect(loaded.weights.vision).toEqual(tiny.weights.vision);
    expect(loaded.tokenizer.encode("a<|image|>b")).toEqual([97, imageId, 98]);
    // Text-only models keep their vocabulary.
    expect((await writeTinyModel(await tempDir())).tokenizer.ids.image).toBeUndefined();
  });
});
