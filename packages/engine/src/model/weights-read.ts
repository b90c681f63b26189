// Loading a Llama / Qwen2 checkpoint from `model.safetensors` or the shards listed
// in `model.safetensors.index.json`: every tensor's presence and shape checked in
// the headers before any data is read, each matrix held in the weight dtype.
import { access } from "node:fs/promises";
import { basename, join } from "node:path";
import type { WeightArray, WeightDtypeChoice } from "@opentinker/kernels";
import { z } from "zod";
import type { ModelConfig } from "./config.ts";
import { isNotFound, parseWithSchema, readJsonFile } from "./files.ts";
import { readSafetensorsHeader, readSafetensorsWeights } from "./safetensors.ts";
import { heldDtype, weightDtypeFromEnv } from "./weight-dtype.ts";
import {
  assembleModelWeights,
  INDEX_FILE,
  type ModelWeights,
  matrixTensorNames,
  modelTensorSpecs,
  SINGLE_FILE,
  type TensorSpec,
} from "./weights.ts";

type TensorPlacement = Map<string, string[]>;

const IndexSchema = z.object({ weight_map: z.record(z.string(), z.string()) });

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

async function placeFromIndex(dir: string, names: readonly string[]): Promise<TensorPlacement> {
  const indexPath = join(dir, INDEX_FILE);
  const index = parseWithSchema(IndexSchema, await readJsonFile(indexPath, "a safetensors index"), indexPath);
  const placement: TensorPlacement = new Map();
  for (const name of names) {
    const file = index.weight_map[name];
    if (file === undefined) throw new Error(`${indexPath}: weight_map has no entry for "${name}"`);
    // A shard must sit in the model directory: an index cannot point the loader elsewhere.
    if (basename(file) !== file || file === "." || file === "..") {
      throw new Error(`${indexPath}: weight_map["${name}"] ${JSON.stringify(file)} is not a file name`);
    }
    placement.set(file, [...(placement.get(file) ?? []), name]);
  }
  return placement;
}

async function placeTensors(dir: string, names: readonly string[]): Promise<TensorPlacement> {
  if (await exists(join(dir, SINGLE_FILE))) return new Map([[SINGLE_FILE, [...names]]]);
  if (await exists(join(dir, INDEX_FILE))) return placeFromIndex(dir, names);
  throw new Error(`${dir}: neither ${SINGLE_FILE} nor ${INDEX_FILE} found`);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === b[i]);
}

/**
 * Checks every tensor's presence and shape in the headers, before any data is
 * read; returns the dtype each is stored in.
 */
async function checkHeaders(
  dir: string,
  placement: TensorPlacement,
  shapes: Map<string, number[]>,
): Promise<Map<string, string>> {
  const stored = new Map<string, string>();
  for (const [file, names] of placement) {
    const path = join(dir, file);
    const header = await readSafetensorsHeader(path);
    for (const name of names) {
      const found = header.tensors.get(name)?.shape;
      const expected = shapes.get(name) ?? [];
      stored.set(name, header.tensors.get(name)?.dtype ?? "");
      if (!found) throw new Error(`${path}: tensor "${name}" is missing`);
      if (!sameShape(found, expected)) {
        throw new Error(
          `${path}: tensor "${name}" has shape [${found.join(", ")}], config.json needs [${expected.join(", ")}]`,
        );
      }
    }
  }
  return stored;
}

/**
 * Reads the tensors of `specs` (and only those) from the model directory, whichever
 * file each lives in; those `asBf16` picks (by name and stored dtype) as bf16 bits.
 */
async function readTensors(
  dir: string,
  specs: readonly TensorSpec[],
  asBf16: (name: string, storedDtype: string) => boolean,
): Promise<Map<string, WeightArray>> {
  const placement = await placeTensors(
    dir,
    specs.map((spec) => spec.name),
  );
  const stored = await checkHeaders(dir, placement, new Map(specs.map((spec) => [spec.name, spec.shape])));
  const bf16 = new Set([...stored].filter(([name, dtype]) => asBf16(name, dtype)).map(([name]) => name));
  const found = new Map<string, WeightArray>();
  for (const [file, keys] of placement) {
    for (const [name, data] of await readSafetensorsWeights(join(dir, file), keys, bf16))
      found.set(name, data);
  }
  return found;
}

/**
 * Loads the weights of a Llama / Qwen2 checkpoint, matrices in `dtype` (default:
 * OPENTINKER_WEIGHT_DTYPE, else "stored": each as its file has it): in bf16, BF16
 * tensors are read as stored and others rounded once. Tensors the engine does not use (e.g. `rotary_emb.inv_freq`
 * buffers in older checkpoints, or an lm_head next to tied embeddings) are not
 * read at all.
 */
export async function loadModelWeights(
  dir: string,
  config: ModelConfig,
  dtype: WeightDtypeChoice = weightDtypeFromEnv(),
): Promise<ModelWeights> {
  const matrices = matrixTensorNames(config);
  const found = await readTensors(
    dir,
    modelTensorSpecs(config),
    (name, stored) => matrices.has(name) && heldDtype(dtype, stored) === "bf16",
  );
  return assembleModelWeights(config, ({ name }) => {
    const tensor = found.get(name);
    if (!tensor) throw new Error(`${dir}: tensor "${name}" was not read`);
    return tensor;
  });
}
