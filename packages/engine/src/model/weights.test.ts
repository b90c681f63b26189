import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { type TinyModelOptions, writeTinyModel } from "../testing/tiny-model.ts";
import { readSafetensors, readSafetensorsHeader, writeSafetensors } from "./safetensors.ts";
import {
  EMBED_TOKENS,
  INDEX_FILE,
  LM_HEAD,
  type ModelWeights,
  modelTensorSpecs,
  modelWeightTensors,
  SINGLE_FILE,
} from "./weights.ts";
import { loadModelWeights } from "./weights-read.ts";

const SMALL: TinyModelOptions = {
  hiddenSize: 16,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  intermediateSize: 24,
};

function expectSameWeights(actual: ModelWeights, expected: ModelWeights): void {
  expect(actual.embedTokens).toEqual(expected.embedTokens);
  expect(actual.norm).toEqual(expected.norm);
  expect(actual.lmHead).toEqual(expected.lmHead);
  expect(actual.layers).toEqual(expected.layers);
}

/** Rewrites a single-file model's weights through `edit`, keeping everything else. */
async function rewriteWeights(
  dir: string,
  edit: (tensors: Map<string, { shape: number[]; data: Float32Array }>) => void,
) {
  const path = join(dir, SINGLE_FILE);
  const { tensors } = await readSafetensors(path);
  const editable = new Map([...tensors].map(([name, t]) => [name, { shape: t.shape, data: t.data }]));
  edit(editable);
  await writeSafetensors(path, editable);
}

describe("HF tensor names", () => {
  test("a tied Llama lists embed, 9 tensors per layer and the final norm, without lm_head", () => {
    const specs = modelTensorSpecs({
      architecture: "llama",
      hiddenSize: 8,
      intermediateSize: 12,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      headDim: 4,
      vocabSize: 10,
      rmsNormEps: 1e-6,
      ropeTheta: 10_000,
      ropeScaling: null,
      maxPositionEmbeddings: 16,
      tieWordEmbeddings: true,
      attentionBias: false,
      bosTokenId: null,
      eosTokenIds: [],
      torchDtype: "float32",
    });
    expect(specs).toEqual([
      { name: "model.embed_tokens.weight", shape: [10, 8] },
      { name: "model.layers.0.self_attn.q_proj.weight", shape: [8, 8] },
      { name: "model.layers.0.self_attn.k_proj.weight", shape: [4, 8] },
      { name: "model.layers.0.self_attn.v_proj.weight", shape: [4, 8] },
      { name: "model.layers.0.self_attn.o_proj.weight", shape: [8, 8] },
      { name: "model.layers.0.mlp.gate_proj.weight", shape: [12, 8] },
      { name: "model.layers.0.mlp.up_proj.weight", shape: [12, 8] },
      { name: "model.layers.0.mlp.down_proj.weight", shape: [8, 12] },
      { name: "model.layers.0.input_layernorm.weight", shape: [8] },
      { name: "model.layers.0.post_attention_layernorm.weight", shape: [8] },
      { name: "model.norm.weight", shape: [8] },
    ]);
  });

  test("attention biases add q/k/v .bias tensors; untied adds lm_head.weight", async () => {
    const { config } = await writeTinyModel(await tempDir(), {
      ...SMALL,
      architecture: "qwen2",
      tieWordEmbeddings: false,
    });
    const names = modelTensorSpecs(config).map((spec) => spec.name);
    expect(names).toContain("model.layers.1.self_attn.q_proj.bias");
    expect(names).toContain("model.layers.1.self_attn.k_proj.bias");
    expect(names).toContain("model.layers.1.self_attn.v_proj.bias");
    expect(names.at(-1)).toBe(LM_HEAD);
  });
});

describe("loadModelWeights", () => {
  test("a tied Llama loads as written, and lm_head is the embedding array itself", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    const weights = await loadModelWeights(dir, tiny.config);
    expectSameWeights(weights, tiny.weights);
    expect(weights.lmHead).toBe(weights.embedTokens);
    expect(weights.layers[0]?.qBias).toBeUndefined();
    expect((await readSafetensorsHeader(join(dir, SINGLE_FILE))).tensors.has(LM_HEAD)).toBe(false);
  });

  test("an untied model loads a separate lm_head", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, tieWordEmbeddings: false });
    const weights = await loadModelWeights(dir, tiny.config);
    expectSameWeights(weights, tiny.weights);
    expect(weights.lmHead).not.toBe(weights.embedTokens);
    expect(weights.lmHead).not.toEqual(weights.embedTokens);
  });

  test("a Qwen2 model loads its q/k/v biases", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, architecture: "qwen2" });
    const weights = await loadModelWeights(dir, tiny.config);
    expectSameWeights(weights, tiny.weights);
    expect(weights.layers[1]?.kBias).toHaveLength(tiny.config.numKvHeads * tiny.config.headDim);
  });

  test.each(["F32", "F16", "BF16"] as const)(
    "%s weights sharded over 3 files load through the index",
    async (dtype) => {
      const dir = await tempDir();
      const tiny = await writeTinyModel(dir, { ...SMALL, dtype, shards: 3, tieWordEmbeddings: false });
      expect((await readdir(dir)).filter((f) => f.endsWith(".safetensors")).sort()).toEqual([
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
      ]);
      // Held in f32 here, to compare with what was written (default: BF16 stays bf16).
      expectSameWeights(await loadModelWeights(dir, tiny.config, "f32"), tiny.weights);
    },
  );

  test("the index lists every tensor and the total byte size, as transformers writes it", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, dtype: "BF16", shards: 2 });
    const index = JSON.parse(await readFile(join(dir, INDEX_FILE), "utf8"));
    const specs = modelTensorSpecs(tiny.config);
    expect(Object.keys(index.weight_map).sort()).toEqual(specs.map((s) => s.name).sort());
    const values = specs.reduce((sum, s) => sum + s.shape.reduce((a, b) => a * b, 1), 0);
    expect(index.metadata.total_size).toBe(values * 2);
  });

  test("tensors the engine does not use are ignored", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await rewriteWeights(dir, (tensors) => {
      tensors.set("model.layers.0.self_attn.rotary_emb.inv_freq", {
        shape: [2],
        data: Float32Array.of(1, 0.1),
      });
    });
    expectSameWeights(await loadModelWeights(dir, tiny.config), tiny.weights);
  });

  test("a stray lm_head next to tied embeddings is not used", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    const { vocabSize, hiddenSize } = tiny.config;
    await rewriteWeights(dir, (tensors) => {
      tensors.set(LM_HEAD, {
        shape: [vocabSize, hiddenSize],
        data: new Float32Array(vocabSize * hiddenSize),
      });
    });
    const weights = await loadModelWeights(dir, tiny.config);
    expect(weights.lmHead).toBe(weights.embedTokens);
  });
});

describe("loadModelWeights errors name the file and the tensor", () => {
  test("a missing tensor", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await rewriteWeights(dir, (tensors) => tensors.delete("model.layers.1.mlp.up_proj.weight"));
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${join(dir, SINGLE_FILE)}: tensor "model.layers.1.mlp.up_proj.weight" is missing`,
    );
  });

  test("an untied config whose checkpoint has no lm_head", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await expect(loadModelWeights(dir, { ...tiny.config, tieWordEmbeddings: false })).rejects.toThrow(
      `tensor "${LM_HEAD}" is missing`,
    );
  });

  test("a missing bias when the config says the attention has biases", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await expect(loadModelWeights(dir, { ...tiny.config, attentionBias: true })).rejects.toThrow(
      'tensor "model.layers.0.self_attn.q_proj.bias" is missing',
    );
  });

  test("a tensor whose shape does not match config.json", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await rewriteWeights(dir, (tensors) => {
      tensors.set("model.norm.weight", { shape: [2, 8], data: new Float32Array(16) });
    });
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${join(dir, SINGLE_FILE)}: tensor "model.norm.weight" has shape [2, 8], config.json needs [16]`,
    );
  });

  test("a config with a different vocabulary size than the checkpoint", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    await expect(
      loadModelWeights(dir, { ...tiny.config, vocabSize: tiny.config.vocabSize + 1 }),
    ).rejects.toThrow(new RegExp(`tensor "${EMBED_TOKENS}" has shape \\[${tiny.config.vocabSize}, 16\\]`));
  });

  test("a directory with neither model.safetensors nor an index", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(await tempDir(), SMALL);
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${dir}: neither model.safetensors nor model.safetensors.index.json found`,
    );
  });

  async function shardedWithIndex(edit: (weightMap: Record<string, string>) => void) {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, shards: 2 });
    const indexPath = join(dir, INDEX_FILE);
    const index = JSON.parse(await readFile(indexPath, "utf8"));
    edit(index.weight_map);
    await writeFile(indexPath, JSON.stringify(index));
    return { dir, tiny, indexPath };
  }

  test("a tensor missing from the index's weight_map", async () => {
    const { dir, tiny, indexPath } = await shardedWithIndex((map) => {
      delete map["model.norm.weight"];
    });
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${indexPath}: weight_map has no entry for "model.norm.weight"`,
    );
  });

  test("a weight_map entry pointing at a shard that lacks the tensor", async () => {
    const { dir, tiny } = await shardedWithIndex((map) => {
      map["model.norm.weight"] = "model-00001-of-00002.safetensors";
    });
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${join(dir, "model-00001-of-00002.safetensors")}: tensor "model.norm.weight" is missing`,
    );
  });

  test("a weight_map entry that points outside the model directory", async () => {
    const { dir, tiny, indexPath } = await shardedWithIndex((map) => {
      map["model.norm.weight"] = "../elsewhere.safetensors";
    });
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${indexPath}: weight_map["model.norm.weight"] "../elsewhere.safetensors" is not a file name`,
    );
  });

  test("a shard named by the index that does not exist", async () => {
    const { dir, tiny } = await shardedWithIndex((map) => {
      map["model.norm.weight"] = "model-00009-of-00009.safetensors";
    });
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${join(dir, "model-00009-of-00009.safetensors")}: not found`,
    );
  });

  test("an index without a weight_map", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, shards: 2 });
    await writeFile(join(dir, INDEX_FILE), JSON.stringify({ metadata: {} }));
    await expect(loadModelWeights(dir, tiny.config)).rejects.toThrow(
      `${join(dir, INDEX_FILE)}: weight_map: is missing`,
    );
  });
});

describe("modelWeightTensors", () => {
  test("maps every weight to its HF name and shape, leaving a tied lm_head out", async () => {
    const tiny = await writeTinyModel(await tempDir(), { ...SMALL, architecture: "qwen2" });
    const tensors = modelWeightTensors(tiny.config, tiny.weights);
    expect([...tensors].map(([name, t]) => ({ name, shape: t.shape }))).toEqual(
      modelTensorSpecs(tiny.config),
    );
    expect(tensors.get("model.layers.1.self_attn.v_proj.bias")?.data).toBe(tiny.weights.layers[1]?.vBias);
    expect(tensors.has(LM_HEAD)).toBe(false);
  });

  test("a weight of the wrong length is an error naming the tensor", async () => {
    const tiny = await writeTinyModel(await tempDir(), SMALL);
    const broken = { ...tiny.weights, norm: new Float32Array(3) };
    expect(() => modelWeightTensors(tiny.config, broken)).toThrow(
      "model.norm.weight: expected 16 values [16], got 3",
    );
  });

  test("a missing bias is an error naming the layer", async () => {
    const tiny = await writeTinyModel(await tempDir(), SMALL);
    expect(() => modelWeightTensors({ ...tiny.config, attentionBias: true }, tiny.weights)).toThrow(
      "weights.layers[0].qBias is missing",
    );
  });
});
