// Writing a model directory in the Hugging Face layout, the inverse of
// loadModelConfig + loadModelWeights: config.json and either one
// model.safetensors or shards named by model.safetensors.index.json.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { type ModelConfig, modelConfigToJson } from "./config.ts";
import { type WrittenFile, writeJsonFile } from "./files.ts";
import type { FloatDtype } from "./float-convert.ts";
import { FLOAT_DTYPE_BYTES } from "./float-convert.ts";
import { writeSafetensors } from "./safetensors.ts";
import { INDEX_FILE, type ModelWeights, modelWeightTensors, SINGLE_FILE } from "./weights.ts";

export interface WriteWeightsOptions {
  /** Stored dtype of every tensor (default F32). */
  dtype?: FloatDtype;
  /** 1 (default) writes model.safetensors; more splits the tensors over that many shards. */
  shards?: number;
}

// transformers refuses safetensors whose metadata lacks a known "format".
const METADATA = { format: "pt" };

/** Writes `<dir>/config.json`. */
export function writeModelConfig(dir: string, config: ModelConfig): Promise<WrittenFile> {
  return writeJsonFile(join(dir, "config.json"), modelConfigToJson(config));
}

function shardName(index: number, count: number): string {
  const pad = (n: number) => String(n).padStart(5, "0");
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}

/** Splits names into `count` contiguous groups of near-equal size, none empty. */
function splitIntoShards(names: readonly string[], count: number): string[][] {
  if (!Number.isInteger(count) || count < 1 || count > names.length) {
    throw new Error(`shards must be an integer from 1 to ${names.length} (got ${count})`);
  }
  const bound = (i: number) => Math.floor((i * names.length) / count);
  return Array.from({ length: count }, (_, i) => names.slice(bound(i), bound(i + 1)));
}

function withDtype(
  tensors: Map<string, { shape: number[]; data: Float32Array }>,
  names: readonly string[],
  dtype: FloatDtype,
) {
  const out = new Map<string, { shape: number[]; data: Float32Array; dtype: FloatDtype }>();
  for (const name of names) {
    const tensor = tensors.get(name);
    if (tensor) out.set(name, { ...tensor, dtype });
  }
  return out;
}

/**
 * Writes the weights as transformers saves them (tied lm_head left out). Shards are
 * written before the index, and the other layout's file is removed afterwards, so a
 * reader never sees an index naming a missing shard or a stale model.safetensors.
 */
export async function writeModelWeights(
  dir: string,
  config: ModelConfig,
  weights: ModelWeights,
  options: WriteWeightsOptions = {},
): Promise<WrittenFile[]> {
  const dtype = options.dtype ?? "F32";
  const tensors = modelWeightTensors(config, weights);
  const names = [...tensors.keys()];
  const groups = splitIntoShards(names, options.shards ?? 1);
  if (groups.length === 1) {
    const file = await writeSafetensors(join(dir, SINGLE_FILE), withDtype(tensors, names, dtype), METADATA);
    await rm(join(dir, INDEX_FILE), { force: true });
    return [file];
  }
  const written: WrittenFile[] = [];
  const fileOf = new Map<string, string>();
  for (const [index, group] of groups.entries()) {
    const file = shardName(index, groups.length);
    written.push(await writeSafetensors(join(dir, file), withDtype(tensors, group, dtype), METADATA));
    for (const name of group) fileOf.set(name, file);
  }
  // Sorted by name, as transformers writes it.
  const weightMap = Object.fromEntries([...fileOf].sort(([a], [b]) => (a < b ? -1 : 1)));
  const totalSize = [...tensors.values()].reduce(
    (sum, t) => sum + t.data.length * FLOAT_DTYPE_BYTES[dtype],
    0,
  );
  written.push(
    await writeJsonFile(join(dir, INDEX_FILE), {
      metadata: { total_size: totalSize },
      weight_map: weightMap,
    }),
  );
  await rm(join(dir, SINGLE_FILE), { force: true });
  return written;
}
