import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { loadModelConfig, modelConfigToJson, parseModelConfig } from "./config.ts";

// Qwen/Qwen2.5-0.5B config.json, as published.
const QWEN25_05B = {
  architectures: ["Qwen2ForCausalLM"],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151643,
  hidden_act: "silu",
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 24,
  model_type: "qwen2",
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.40.1",
  use_cache: true,
  use_mrope: false,
  use_sliding_window: false,
  vocab_size: 151936,
};

// HuggingFaceTB/SmolLM2-135M config.json (a Llama), as published.
const SMOLLM2_135M = {
  architectures: ["LlamaForCausalLM"],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 0,
  eos_token_id: 0,
  head_dim: 64,
  hidden_act: "silu",
  hidden_size: 576,
  initializer_range: 0.041666666666666664,
  intermediate_size: 1536,
  is_llama_config: true,
  max_position_embeddings: 8192,
  mlp_bias: false,
  model_type: "llama",
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.40.1",
  use_cache: true,
  vocab_size: 49152,
};

const SOURCE = "/models/m/config.json";

function parseWith(overrides: Record<string, unknown>, base: Record<string, unknown> = SMOLLM2_135M) {
  return parseModelConfig({ ...base, ...overrides }, SOURCE);
}

function without(key: string, base: Record<string, unknown> = SMOLLM2_135M): Record<string, unknown> {
  const copy = { ...base };
  delete copy[key];
  return copy;
}

describe("parseModelConfig on published configs", () => {
  test("Qwen2.5-0.5B becomes a qwen2 config with q/k/v biases, GQA 14:2 and tied embeddings", () => {
    expect(parseModelConfig(QWEN25_05B, SOURCE)).toEqual({
      architecture: "qwen2",
      hiddenSize: 896,
      intermediateSize: 4864,
      numLayers: 24,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      vocabSize: 151936,
      rmsNormEps: 1e-6,
      ropeTheta: 1_000_000,
      ropeScaling: null,
      maxPositionEmbeddings: 32768,
      tieWordEmbeddings: true,
      attentionBias: true,
      bosTokenId: 151643,
      eosTokenIds: [151643],
      torchDtype: "bfloat16",
    });
  });

  test("SmolLM2-135M becomes a llama config without biases", () => {
    expect(parseModelConfig(SMOLLM2_135M, SOURCE)).toEqual({
      architecture: "llama",
      hiddenSize: 576,
      intermediateSize: 1536,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      vocabSize: 49152,
      rmsNormEps: 1e-5,
      ropeTheta: 100_000,
      ropeScaling: null,
      maxPositionEmbeddings: 8192,
      tieWordEmbeddings: true,
      attentionBias: false,
      bosTokenId: 0,
      eosTokenIds: [0],
      torchDtype: "bfloat16",
    });
  });
});

describe("parseModelConfig defaults and variants", () => {
  test("num_key_value_heads defaults to num_attention_heads (plain multi-head attention)", () => {
    expect(parseModelConfig(without("num_key_value_heads"), SOURCE).numKvHeads).toBe(9);
  });

  test("head_dim defaults to hidden_size / num_attention_heads", () => {
    expect(parseModelConfig(without("head_dim", QWEN25_05B), SOURCE).headDim).toBe(896 / 14);
  });

  test("an explicit head_dim wins over hidden_size / num_attention_heads", () => {
    expect(parseWith({ head_dim: 128 }).headDim).toBe(128);
  });

  test("rope_theta defaults to 10000 and a missing tie_word_embeddings means untied", () => {
    const config = parseModelConfig(without("tie_word_embeddings", without("rope_theta")), SOURCE);
    expect(config.ropeTheta).toBe(10_000);
    expect(config.tieWordEmbeddings).toBe(false);
  });

  test("a list of eos ids (Llama 3.1 Instruct) is kept as a list", () => {
    expect(parseWith({ eos_token_id: [1, 2, 3] }).eosTokenIds).toEqual([1, 2, 3]);
  });

  test("null bos and eos ids become null and an empty list", () => {
    const config = parseWith({ bos_token_id: null, eos_token_id: null });
    expect(config.bosTokenId).toBeNull();
    expect(config.eosTokenIds).toEqual([]);
  });

  test("a Llama with attention_bias true has q/k/v biases", () => {
    expect(parseWith({ attention_bias: true }).attentionBias).toBe(true);
  });

  test("Qwen2 has q/k/v biases even without an attention_bias key", () => {
    expect(parseModelConfig(without("attention_bias", QWEN25_05B), SOURCE).attentionBias).toBe(true);
  });

  test("a llama3 rope_scaling object is kept as written", () => {
    const ropeScaling = {
      factor: 32.0,
      high_freq_factor: 4.0,
      low_freq_factor: 1.0,
      original_max_position_embeddings: 8192,
      rope_type: "llama3",
    };
    expect(parseWith({ rope_scaling: ropeScaling }).ropeScaling).toEqual(ropeScaling);
  });

  test("an old-style rope_scaling with `type` instead of `rope_type` is accepted", () => {
    expect(parseWith({ rope_scaling: { type: "linear", factor: 2 } }).ropeScaling).toEqual({
      type: "linear",
      factor: 2,
    });
  });

  test("newer transformers' `dtype` key stands in for torch_dtype; absent, the dtype is float32", () => {
    expect(parseModelConfig({ ...without("torch_dtype"), dtype: "float16" }, SOURCE).torchDtype).toBe(
      "float16",
    );
    expect(parseModelConfig(without("torch_dtype"), SOURCE).torchDtype).toBe("float32");
  });
});

describe("parseModelConfig errors name the file and the key", () => {
  test("an unsupported architecture lists the supported ones", () => {
    expect(() => parseWith({ architectures: ["GPT2LMHeadModel"] })).toThrow(
      `${SOURCE}: architectures[0] "GPT2LMHeadModel" is not supported (supported: LlamaForCausalLM, Qwen2ForCausalLM)`,
    );
  });

  test("missing or empty architectures is an error", () => {
    expect(() => parseModelConfig(without("architectures"), SOURCE)).toThrow(
      `${SOURCE}: architectures: is missing`,
    );
    expect(() => parseWith({ architectures: [] })).toThrow(/config\.json: architectures: .*>=1/);
  });

  test.each([
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "vocab_size",
    "rms_norm_eps",
    "max_position_embeddings",
  ])("a missing %s is an error naming it", (key) => {
    expect(() => parseModelConfig(without(key), SOURCE)).toThrow(`${SOURCE}: ${key}: is missing`);
  });

  test("a value of the wrong type names the key and shows the value", () => {
    expect(() => parseWith({ num_attention_heads: "9" })).toThrow(
      /config\.json: num_attention_heads: .*expected number.*\(got "9"\)/,
    );
  });

  test("a fractional or non-positive size is an error", () => {
    expect(() => parseWith({ hidden_size: 57.6 })).toThrow(/hidden_size: .*\(got 57.6\)/);
    expect(() => parseWith({ num_hidden_layers: 0 })).toThrow(/num_hidden_layers: .*\(got 0\)/);
  });

  test("every bad key is reported, not only the first", () => {
    expect(() => parseModelConfig(without("vocab_size", without("hidden_size")), SOURCE)).toThrow(
      `${SOURCE}: hidden_size: is missing; vocab_size: is missing`,
    );
  });

  test("num_key_value_heads must divide num_attention_heads", () => {
    expect(() => parseWith({ num_key_value_heads: 2 })).toThrow(
      `${SOURCE}: num_key_value_heads 2 does not divide num_attention_heads 9`,
    );
  });

  test("hidden_size must split evenly into heads when head_dim is absent", () => {
    expect(() => parseModelConfig({ ...without("head_dim"), hidden_size: 580 }, SOURCE)).toThrow(
      `${SOURCE}: hidden_size 580 is not divisible by num_attention_heads 9`,
    );
  });

  test("an activation other than silu is rejected rather than silently computed as SwiGLU", () => {
    expect(() => parseWith({ hidden_act: "gelu" })).toThrow(
      /hidden_act: only "silu" \(SwiGLU\) is supported/,
    );
  });

  test("sliding-window attention and MLP biases are rejected rather than ignored", () => {
    expect(() => parseWith({ use_sliding_window: true }, QWEN25_05B)).toThrow(
      /use_sliding_window: true is not/,
    );
    expect(() => parseWith({ mlp_bias: true })).toThrow(/mlp_bias: true is not supported/);
  });

  test("a rope_scaling object without a rope_type or type string is an error", () => {
    expect(() => parseWith({ rope_scaling: { factor: 2 } })).toThrow(/rope_scaling: needs a rope_type/);
  });

  test("special token ids outside the vocabulary are errors", () => {
    expect(() => parseWith({ eos_token_id: [0, 49152] })).toThrow(
      `${SOURCE}: eos_token_id 49152 is outside vocab_size 49152`,
    );
    expect(() => parseWith({ bos_token_id: 50000 })).toThrow(/bos_token_id 50000 is outside/);
  });

  test("a config that is not an object is an error", () => {
    expect(() => parseModelConfig([1, 2], SOURCE)).toThrow(`${SOURCE}: (root):`);
  });
});

describe("loadModelConfig", () => {
  test("reads config.json from the model directory", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "config.json"), JSON.stringify(QWEN25_05B));
    expect((await loadModelConfig(dir)).architecture).toBe("qwen2");
  });

  test("a missing config.json is an error naming its path", async () => {
    const dir = await tempDir();
    await expect(loadModelConfig(dir)).rejects.toThrow(`${join(dir, "config.json")}: not found`);
  });

  test("invalid JSON is an error naming the file", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "config.json"), "{ not json");
    await expect(loadModelConfig(dir)).rejects.toThrow(`${join(dir, "config.json")}: not valid JSON`);
  });

  test("errors in a loaded file name its full path and the key", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "config.json"), JSON.stringify(without("vocab_size")));
    await expect(loadModelConfig(dir)).rejects.toThrow(`${join(dir, "config.json")}: vocab_size: is missing`);
  });
});

describe("modelConfigToJson", () => {
  test.each([
    ["Qwen2.5-0.5B", QWEN25_05B],
    ["SmolLM2-135M", SMOLLM2_135M],
    [
      "a Llama with biases, multiple eos ids and rope scaling",
      {
        ...SMOLLM2_135M,
        attention_bias: true,
        eos_token_id: [1, 2],
        rope_scaling: { rope_type: "linear", factor: 4 },
      },
    ],
  ])("%s survives a round trip through config.json", (_, json) => {
    const config = parseModelConfig(json, SOURCE);
    expect(parseModelConfig(JSON.parse(JSON.stringify(modelConfigToJson(config))), SOURCE)).toEqual(config);
  });

  test("the written config names the HF architecture class and model_type", () => {
    const json = modelConfigToJson(parseModelConfig(QWEN25_05B, SOURCE));
    expect(json.architectures).toEqual(["Qwen2ForCausalLM"]);
    expect(json.model_type).toBe("qwen2");
    expect(json.eos_token_id).toBe(151643);
  });
});

describe("vision-language configs", () => {
  const VISION = { vision_config: { image_size: 32, patch_size: 8, num_channels: 3 }, image_token_id: 49151 };

  test("vision_config and image_token_id give the vision part; text-only configs have none", () => {
    expect(parseWith(VISION).vision).toEqual({
      imageSize: 32,
      patchSize: 8,
      numChannels: 3,
      imageTokenId: 49151,
    });
    expect(parseWith({}).vision).toBeUndefined();
  });

  test("survives a round trip through config.json", () => {
    const config = parseWith(VISION);
    const json = modelConfigToJson(config);
    expect(json.vision_config).toEqual(VISION.vision_config);
    expect(json.image_token_id).toBe(49151);
    expect(parseModelConfig(JSON.parse(JSON.stringify(json)), SOURCE)).toEqual(config);
  });

  test("inconsistent vision keys are errors naming the key", () => {
    expect(() => parseWith({ vision_config: VISION.vision_config })).toThrow(
      `${SOURCE}: vision_config is given without the other`,
    );
    expect(() => parseWith({ image_token_id: 5 })).toThrow(`${SOURCE}: image_token_id is given without`);
    expect(() => parseWith({ ...VISION, vision_config: { image_size: 30, patch_size: 8 } })).toThrow(
      `${SOURCE}: vision_config.image_size 30 is not divisible by vision_config.patch_size 8`,
    );
    expect(() => parseWith({ ...VISION, image_token_id: 49152 })).toThrow(
      `${SOURCE}: image_token_id 49152 is outside vocab_size 49152`,
    );
    expect(() =>
      parseWith({ ...VISION, vision_config: { image_size: 32, patch_size: 8, num_channels: 4 } }),
    ).toThrow(/vision_config\.num_channels: only 3 \(RGB\) is supported/);
  });
});
