import { readFile, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { loadHfModel } from "./hf-model.ts";
import { widenWeight } from "./weight-dtype.ts";

describe("loadHfModel", () => {
  test("loads config, weights and tokenizer of a model directory", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { architecture: "qwen2", dtype: "BF16", shards: 2 });
    const model = await loadHfModel(dir);
    expect(model.dir).toBe(dir);
    expect(model.config).toEqual(tiny.config);
    // A BF16 checkpoint's matrices are held in bf16 by default, the same values.
    expect(model.weights.embedTokens).toBeInstanceOf(Uint16Array);
    expect(widenWeight(model.weights.embedTokens)).toEqual(tiny.weights.embedTokens);
    expect(model.weights.layers[0]?.qBias).toEqual(tiny.weights.layers[0]?.qBias);
    expect(model.tokenizer.eosTokenIds).toEqual(tiny.config.eosTokenIds);
    const prompt = model.tokenizer.applyChatTemplate([{ role: "user", content: "2+2?" }], {
      addGenerationPrompt: true,
    });
    expect(model.tokenizer.decode(model.tokenizer.encode(prompt))).toBe(prompt);
  });

  test("a relative directory is resolved to an absolute one", async () => {
    const dir = await tempDir();
    await writeTinyModel(dir, {});
    expect((await loadHfModel(relative(process.cwd(), dir))).dir).toBe(dir);
  });

  test("a tokenizer larger than the config's vocab_size is an error before the weights are read", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, {});
    const configPath = join(dir, "config.json");
    const json = JSON.parse(await readFile(configPath, "utf8"));
    // Special ids moved inside the smaller vocabulary, so config.json itself is valid.
    const shrunk = { ...json, vocab_size: tiny.tokenizer.size - 1, bos_token_id: 0, eos_token_id: 0 };
    await writeFile(configPath, JSON.stringify(shrunk));
    await expect(loadHfModel(dir)).rejects.toThrow(
      `${dir}: tokenizer has ${tiny.tokenizer.size} tokens but config.json vocab_size is ${tiny.tokenizer.size - 1}`,
    );
  });

  test("a padded vocabulary (vocab_size above the tokenizer's) loads", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { vocabSize: 320 });
    const model = await loadHfModel(dir);
    expect(model.config.vocabSize).toBe(320);
    expect(model.tokenizer.vocabSize).toBe(tiny.tokenizer.size);
    expect(model.weights.embedTokens).toHaveLength(320 * model.config.hiddenSize);
  });
});
