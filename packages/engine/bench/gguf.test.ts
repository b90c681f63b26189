import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { floatsToBf16, modelTensorSpecs, widenWeight } from "../src/model/index.ts";
import { tempDir } from "../src/testing/temp-dir.ts";
import { TINY_MODEL, type TinyModelOptions, writeTinyModel } from "../src/testing/tiny-model.ts";
import { GGML_TYPE_BF16, GGML_TYPE_F32, GgufType } from "./gguf.ts";
import { ggufTensorName, modelToGguf, permuteRotaryRows, writeHfDirAsGguf } from "./gguf-model.ts";

// A small, independent GGUF reader: it parses what the writer wrote, following
// the format's description rather than the writer's code.
interface ParsedTensor {
  name: string;
  ne: number[];
  type: number;
  offset: number;
}

interface ParsedGguf {
  bytes: Buffer;
  version: number;
  metadata: Map<string, unknown>;
  tensors: ParsedTensor[];
  alignment: number;
  dataStart: number;
  size: number;
  data(tensor: ParsedTensor): Float32Array;
}

function parseGguf(bytes: Buffer): ParsedGguf {
  let at = 0;
  const u32 = () => {
    const v = bytes.readUInt32LE(at);
    at += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(bytes.readBigUInt64LE(at));
    at += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = bytes.toString("utf8", at, at + n);
    at += n;
    return s;
  };
  const value = (type: number): unknown => {
    switch (type) {
      case GgufType.UINT32:
        return u32();
      case GgufType.INT32: {
        const v = bytes.readInt32LE(at);
        at += 4;
        return v;
      }
      case GgufType.FLOAT32: {
        const v = bytes.readFloatLE(at);
        at += 4;
        return v;
      }
      case GgufType.BOOL:
        return bytes[at++] === 1;
      case GgufType.STRING:
        return str();
      case GgufType.ARRAY: {
        const itemType = u32();
        return Array.from({ length: u64() }, () => value(itemType));
      }
      default:
        throw new Error(`unexpected gguf type ${type} at byte ${at}`);
    }
  };
  expect(bytes.toString("ascii", 0, 4)).toBe("GGUF");
  at = 4;
  const version = u32();
  const tensorCount = u64();
  const kvCount = u64();
  const metadata = new Map<string, unknown>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    metadata.set(key, value(u32()));
  }
  const tensors = Array.from({ length: tensorCount }, () => {
    const name = str();
    const ne = Array.from({ length: u32() }, u64);
    return { name, ne, type: u32(), offset: u64() };
  });
  const alignment = (metadata.get("general.alignment") as number | undefined) ?? 32;
  const dataStart = Math.ceil(at / alignment) * alignment;
  return {
    bytes,
    version,
    metadata,
    tensors,
    alignment,
    dataStart,
    size: bytes.length,
    data: (t) => {
      const count = t.ne.reduce((a, b) => a * b, 1);
      const start = dataStart + t.offset;
      return new Float32Array(
        bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + start + count * 4),
      );
    },
  };
}

async function convert(options: TinyModelOptions, dtype: "f32" | "bf16" = "f32") {
  const dir = await tempDir("gguf-");
  const model = await writeTinyModel(join(dir, "hf"), { ...TINY_MODEL, ...options });
  const path = join(dir, "model.gguf");
  const written = await writeHfDirAsGguf(model.dir, path, dtype);
  const bytes = await readFile(path);
  expect(bytes.length).toBe(written);
  return { model, file: parseGguf(bytes) };
}

describe("GGUF writer", () => {
  it("a Llama model parses back: header, hyperparameters, tensor infos, alignment and offsets", async () => {
    const { model, file } = await convert({
      architecture: "llama",
      numHeads: 4,
      numKvHeads: 2,
      tieWordEmbeddings: false,
      attentionBias: true,
    });
    const c = model.config;
    expect(file.version).toBe(3);
    const m = file.metadata;
    expect(m.get("general.architecture")).toBe("llama");
    expect(m.get("general.file_type")).toBe(0);
    expect(m.get("llama.context_length")).toBe(c.maxPositionEmbeddings);
    expect(m.get("llama.embedding_length")).toBe(c.hiddenSize);
    expect(m.get("llama.block_count")).toBe(c.numLayers);
    expect(m.get("llama.feed_forward_length")).toBe(c.intermediateSize);
    expect(m.get("llama.attention.head_count")).toBe(4);
    expect(m.get("llama.attention.head_count_kv")).toBe(2);
    expect(m.get("llama.rope.dimension_count")).toBe(c.headDim);
    expect(m.get("llama.rope.freq_base")).toBe(c.ropeTheta);
    expect(m.get("llama.attention.layer_norm_rms_epsilon")).toBeCloseTo(c.rmsNormEps, 12);
    expect(m.get("tokenizer.ggml.model")).toBe("gpt2");
    const tokens = m.get("tokenizer.ggml.tokens") as string[];
    expect(tokens).toHaveLength(c.vocabSize);
    expect(new Set(tokens).size).toBe(c.vocabSize);
    expect(m.get("tokenizer.ggml.token_type")).toHaveLength(c.vocabSize);
    expect(m.get("tokenizer.ggml.merges")).toEqual([]);
    expect(m.get("tokenizer.ggml.eos_token_id")).toBe(c.eosTokenIds[0]);

    // Every checkpoint tensor, under llama.cpp's name, with ne reversed from the HF shape.
    const specs = modelTensorSpecs(c);
    expect(file.tensors.map((t) => t.name)).toEqual(specs.map((s) => ggufTensorName(s.name)));
    expect(file.tensors.map((t) => t.ne)).toEqual(specs.map((s) => [...s.shape].reverse()));
    expect(file.tensors.map((t) => t.name)).toContain("output.weight");
    expect(file.tensors.every((t) => t.type === GGML_TYPE_F32)).toBe(true);

    // Offsets: aligned, in order, not overlapping, and inside the file.
    expect(file.alignment).toBe(32);
    expect(file.dataStart % 32).toBe(0);
    let end = 0;
    for (const t of file.tensors) {
      expect(t.offset % 32).toBe(0);
      expect(t.offset).toBeGreaterThanOrEqual(end);
      end = t.offset + t.ne.reduce((a, b) => a * b, 1) * 4;
    }
    expect(file.dataStart + end).toBeLessThanOrEqual(file.size);

    // Data: as stored, except q/k (weights and biases), interleaved per head for llama.cpp's RoPE.
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const read = (name: string) => file.data(byName.get(name) as ParsedTensor);
    const w = model.weights;
    const layer = w.layers[0];
    if (!layer?.qBias || !layer.kBias) throw new Error("the tiny model has no q/k biases");
    expect(read("token_embd.weight")).toEqual(w.embedTokens);
    expect(read("output.weight")).toEqual(w.lmHead);
    expect(read("blk.0.attn_v.weight")).toEqual(layer.vProj);
    expect(read("blk.0.ffn_down.weight")).toEqual(layer.downProj);
    expect(read("blk.0.attn_norm.weight")).toEqual(layer.inputNorm);
    expect(read("blk.0.attn_q.weight")).toEqual(permuteRotaryRows(widenWeight(layer.qProj), 4, c.hiddenSize));
    expect(read("blk.0.attn_k.weight")).toEqual(permuteRotaryRows(widenWeight(layer.kProj), 2, c.hiddenSize));
    expect(read("blk.0.attn_q.bias")).toEqual(permuteRotaryRows(layer.qBias, 4, 1));
    expect(read("blk.0.attn_k.bias")).toEqual(permuteRotaryRows(layer.kBias, 2, 1));
    expect(read("blk.0.attn_q.weight")).not.toEqual(layer.qProj);
  });

  it("Qwen2 q/k are stored as in the checkpoint and tied embeddings write no output tensor", async () => {
    const { model, file } = await convert({ architecture: "qwen2", tieWordEmbeddings: true });
    expect(file.metadata.get("general.architecture")).toBe("qwen2");
    expect(file.metadata.get("qwen2.block_count")).toBe(model.config.numLayers);
    const names = file.tensors.map((t) => t.name);
    expect(names).not.toContain("output.weight");
    expect(names).toContain("blk.0.attn_q.bias");
    const q = file.tensors.find((t) => t.name === "blk.0.attn_q.weight") as ParsedTensor;
    expect(file.data(q)).toEqual(model.weights.layers[0]?.qProj);
  });

  it("a model held in bf16 writes bf16 matrices (its own bits, q/k permuted) and f32 norms and biases", async () => {
    const { model, file } = await convert(
      { architecture: "llama", numHeads: 4, numKvHeads: 2, attentionBias: true, dtype: "BF16" },
      "bf16",
    );
    expect(file.metadata.get("general.file_type")).toBe(32);
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const bits = (name: string) => {
      const t = byName.get(name) as ParsedTensor;
      const start = file.dataStart + t.offset;
      const count = t.ne.reduce((a, b) => a * b, 1);
      return new Uint16Array(Uint8Array.from(file.bytes.subarray(start, start + count * 2)).buffer);
    };
    expect(byName.get("token_embd.weight")?.type).toBe(GGML_TYPE_BF16);
    expect(byName.get("blk.0.attn_norm.weight")?.type).toBe(GGML_TYPE_F32);
    expect(byName.get("blk.0.attn_q.bias")?.type).toBe(GGML_TYPE_F32);
    const layer = model.weights.layers[0];
    expect(bits("blk.0.ffn_down.weight")).toEqual(floatsToBf16(layer?.downProj as Float32Array));
    expect(bits("blk.0.attn_q.weight")).toEqual(
      floatsToBf16(permuteRotaryRows(layer?.qProj as Float32Array, 4, model.config.hiddenSize)),
    );
    let end = 0;
    for (const t of file.tensors) {
      expect(t.offset % 32).toBe(0);
      expect(t.offset).toBeGreaterThanOrEqual(end);
      end = t.offset + t.ne.reduce((a, b) => a * b, 1) * (t.type === GGML_TYPE_BF16 ? 2 : 4);
    }
    expect(file.dataStart + end).toBeLessThanOrEqual(file.size);
  });

  it("permuteRotaryRows interleaves the two halves of each head", () => {
    // 2 heads of 4 rows, 1 value per row: halves [0 1 | 2 3] become pairs (0 2)(1 3).
    const biases = Float32Array.of(0, 1, 2, 3, 4, 5, 6, 7);
    expect([...permuteRotaryRows(biases, 2, 1)]).toEqual([0, 2, 1, 3, 4, 6, 5, 7]);
    // Rows move whole.
    const rows = Float32Array.of(0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5);
    expect([...permuteRotaryRows(rows, 1, 2)]).toEqual([0, 0.5, 2, 2.5, 1, 1.5, 3, 3.5]);
  });

  it("refuses a config it cannot describe to llama.cpp", async () => {
    const { model } = await convert({ architecture: "llama" });
    const scaled = { ...model.config, ropeScaling: { rope_type: "linear", factor: 2 } };
    expect(() => modelToGguf(scaled, model.weights)).toThrow(/rope_scaling/);
  });
});
