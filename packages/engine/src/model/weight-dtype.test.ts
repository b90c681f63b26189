import { open } from "node:fs/promises";
import { join } from "node:path";
import { readKernelsEnv } from "@opentinker/kernels";
import { afterEach, describe, expect, test, vi } from "vitest";
import { loadBaseModel } from "../base-model.ts";
import { tempDir } from "../testing/temp-dir.ts";
import { type TinyModelOptions, writeTinyModel } from "../testing/tiny-model.ts";
import { floatsToBf16 } from "./float-convert.ts";
import { readSafetensorsHeader } from "./safetensors.ts";
import { weightDtypeFromEnv } from "./weight-dtype.ts";
import { EMBED_TOKENS, layerTensorName, modelWeightTensors, SINGLE_FILE } from "./weights.ts";
import { loadModelWeights } from "./weights-read.ts";

const SMALL: TinyModelOptions = {
  hiddenSize: 16,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  intermediateSize: 24,
};

/** Overwrites the first bf16 value of a tensor in a single-file checkpoint with `bits`. */
async function pokeFirstBf16(dir: string, name: string, bits: number): Promise<void> {
  const path = join(dir, SINGLE_FILE);
  const header = await readSafetensorsHeader(path);
  const info = header.tensors.get(name);
  if (info?.dtype !== "BF16") throw new Error(`${name} is not a BF16 tensor`);
  const file = await open(path, "r+");
  try {
    await file.write(
      Uint8Array.from([bits & 0xff, bits >>> 8]),
      0,
      2,
      header.dataStart + info.dataOffsets[0],
    );
  } finally {
    await file.close();
  }
}

describe("base weights in bf16", () => {
  test("a BF16 checkpoint's matrices are read as stored, with no float32 round trip; norms become f32", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, dtype: "BF16", tieWordEmbeddings: false });
    // A signalling NaN with a payload: a trip through float32 and back would quiet it (0x7fc1).
    const down = layerTensorName(1, "mlp.down_proj.weight");
    await pokeFirstBf16(dir, down, 0x7f81);
    const weights = await loadModelWeights(dir, tiny.config, "bf16");
    const layer = weights.layers[1];
    if (!layer) throw new Error("no layer 1");
    expect(layer.downProj).toBeInstanceOf(Uint16Array);
    expect(layer.downProj[0]).toBe(0x7f81);
    expect(layer.downProj.slice(1)).toEqual(
      floatsToBf16(tiny.weights.layers[1]?.downProj as Float32Array).slice(1),
    );
    expect(weights.embedTokens).toBeInstanceOf(Uint16Array);
    expect(weights.lmHead).toBeInstanceOf(Uint16Array);
    expect(weights.norm).toBeInstanceOf(Float32Array);
    expect(layer.inputNorm).toEqual(tiny.weights.layers[1]?.inputNorm);
  });

  test("an F32 checkpoint is converted once, to nearest even; a tied lm_head stays the embedding", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, SMALL);
    const weights = await loadModelWeights(dir, tiny.config, "bf16");
    expect(weights.embedTokens).toEqual(floatsToBf16(tiny.weights.embedTokens as Float32Array));
    expect(weights.layers[0]?.qProj).toEqual(floatsToBf16(tiny.weights.layers[0]?.qProj as Float32Array));
    expect(weights.lmHead).toBe(weights.embedTokens);
    // f32 (the default here) loads exactly what was written.
    const f32 = await loadModelWeights(dir, tiny.config, "f32");
    expect(f32.embedTokens).toBeInstanceOf(Float32Array);
    expect(f32.embedTokens).toEqual(tiny.weights.embedTokens);
  });

  test("by default each matrix is held as its file stores it: BF16 as bf16, F32 as f32", async () => {
    const bf16Dir = await tempDir();
    const bf16 = await writeTinyModel(bf16Dir, { ...SMALL, dtype: "BF16" });
    const fromBf16 = await loadModelWeights(bf16Dir, bf16.config, "stored");
    expect(fromBf16.layers[0]?.qProj).toBeInstanceOf(Uint16Array);
    expect(fromBf16.embedTokens).toBeInstanceOf(Uint16Array);
    expect(fromBf16.norm).toBeInstanceOf(Float32Array);
    const f32Dir = await tempDir();
    const f32 = await writeTinyModel(f32Dir, SMALL);
    const fromF32 = await loadModelWeights(f32Dir, f32.config, "stored");
    expect(fromF32.layers[0]?.qProj).toEqual(f32.weights.layers[0]?.qProj);
    expect(fromF32.embedTokens).toBeInstanceOf(Float32Array);
  });

  test("a bf16-held model is written back as BF16, bit for bit", async () => {
    const dir = await tempDir();
    const tiny = await writeTinyModel(dir, { ...SMALL, dtype: "BF16" });
    const weights = await loadModelWeights(dir, tiny.config, "bf16");
    const tensors = modelWeightTensors(tiny.config, weights);
    const embed = tensors.get(EMBED_TOKENS);
    expect(embed?.dtype).toBe("BF16");
    expect(floatsToBf16(embed?.data as Float32Array)).toEqual(weights.embedTokens);
    expect(tensors.get("model.norm.weight")?.dtype).toBeUndefined();
  });

  test("OPENTINKER_WEIGHT_DTYPE takes bf16, f32 or stored and refuses anything else by name", () => {
    expect(readKernelsEnv({ OPENTINKER_WEIGHT_DTYPE: "bf16" }).OPENTINKER_WEIGHT_DTYPE).toBe("bf16");
    expect(readKernelsEnv({ OPENTINKER_WEIGHT_DTYPE: "f32" }).OPENTINKER_WEIGHT_DTYPE).toBe("f32");
    expect(readKernelsEnv({ OPENTINKER_WEIGHT_DTYPE: "stored" }).OPENTINKER_WEIGHT_DTYPE).toBe("stored");
    expect(() => readKernelsEnv({ OPENTINKER_WEIGHT_DTYPE: "fp16" })).toThrow(
      'OPENTINKER_WEIGHT_DTYPE must be one of f32, bf16, stored (or unset), got "fp16"',
    );
    expect(["f32", "bf16", "stored"]).toContain(weightDtypeFromEnv());
  });

  afterEach(() => {
    vi.unstubAllEnvs();
  });

  test("loadBaseModel holds the base in OPENTINKER_WEIGHT_DTYPE when the call names no dtype", async () => {
    const dir = await tempDir();
    await writeTinyModel(dir, SMALL);
    vi.stubEnv("OPENTINKER_WEIGHT_DTYPE", "bf16");
    expect((await loadBaseModel(dir, "tiny")).weights.embedTokens).toBeInstanceOf(Uint16Array);
    expect((await loadBaseModel(dir, "tiny", { weightDtype: "f32" })).weights.embedTokens).toBeInstanceOf(
      Float32Array,
    );
    vi.stubEnv("OPENTINKER_WEIGHT_DTYPE", "f32");
    expect((await loadBaseModel(dir, "tiny")).weights.embedTokens).toBeInstanceOf(Float32Array);
  });
});
