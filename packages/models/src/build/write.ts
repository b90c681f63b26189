// Writes a trained full-parameter policy as a Hugging Face model directory:
// config.json, model.safetensors, tokenizer.json, tokenizer_config.json.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import {
  type FloatDtype,
  type ModelConfig,
  type Policy,
  type WrittenFile,
  writeJsonFile,
  writeModelConfig,
  writeModelWeights,
} from "@opentinker/engine";
import type { TinyTokenizerFiles } from "@opentinker/engine/testing";
import { policyWeights } from "./policy-weights.ts";

const TORCH_DTYPE: Readonly<Record<FloatDtype, string>> = {
  F32: "float32",
  F16: "float16",
  BF16: "bfloat16",
};

export async function writeModelDir(
  dir: string,
  config: ModelConfig,
  policy: Policy,
  tokenizer: TinyTokenizerFiles,
  dtype: FloatDtype,
): Promise<WrittenFile[]> {
  const weights = policyWeights(config, policy);
  const stored = { ...config, torchDtype: TORCH_DTYPE[dtype] };
  await mkdir(dir, { recursive: true });
  return [
    await writeModelConfig(dir, stored),
    ...(await writeModelWeights(dir, stored, weights, { dtype })),
    await writeJsonFile(path.join(dir, "tokenizer.json"), tokenizer.tokenizerJson),
    await writeJsonFile(path.join(dir, "tokenizer_config.json"), tokenizer.tokenizerConfig),
  ];
}
