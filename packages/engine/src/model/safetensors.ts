// The safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON ({ name: { dtype, shape, data_offsets: [begin, end] }, __metadata__? }),
// then the data, with offsets relative to the end of the header.
// https://github.com/huggingface/safetensors#format
//
// Reading validates the whole header before touching data (a corrupt or hostile
// file fails with a message naming the file and tensor, never reads out of
// range) and converts F32 / F16 / BF16 to Float32Array once. Tensors are read
// one at a time, so a file larger than a single Buffer still loads. The header's
// rules (what a valid one is, how one is encoded) are in safetensors-header.ts.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import type { WeightArray } from "@opentinker/kernels";
import { describeValue, IO_CHUNK_BYTES, isNotFound, type WrittenFile, writeFileAtomically } from "./files.ts";
import {
  decodeFloats,
  decodeToBf16,
  encodeFloats,
  FLOAT_DTYPE_BYTES,
  FLOAT_DTYPES,
  type FloatDtype,
  isFloatDtype,
} from "./float-convert.ts";
import {
  elementCount,
  encodeHeader,
  headerLengthOf,
  METADATA_KEY,
  type PlannedTensor,
  parseHeader,
  type SafetensorsHeader,
  type TensorInfo,
} from "./safetensors-header.ts";

export type { WrittenFile } from "./files.ts";
export type { FloatDtype } from "./float-convert.ts";
export type { SafetensorsHeader, TensorInfo } from "./safetensors-header.ts";

export interface LoadedTensor {
  /** The dtype stored in the file; `data` is float32 either way. */
  dtype: FloatDtype;
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsContents {
  metadata: Record<string, string>;
  tensors: Map<string, LoadedTensor>;
}

export interface TensorToWrite {
  shape: readonly number[];
  data: Float32Array;
  /** Stored dtype; F32 when absent. */
  dtype?: FloatDtype;
}

/** Tensors to write, by name: a Map, a plain object, or a list of named tensors. */
export type TensorsToWrite =
  | ReadonlyMap<string, TensorToWrite>
  | Readonly<Record<string, TensorToWrite>>
  | readonly (TensorToWrite & { name: string })[];

async function readExactly(file: FileHandle, target: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < target.byteLength; ) {
    const length = Math.min(IO_CHUNK_BYTES, target.byteLength - done);
    const { bytesRead } = await file.read(target, done, length, position + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + done}`);
    done += bytesRead;
  }
}

async function readFileHeader(file: FileHandle, path: string): Promise<SafetensorsHeader> {
  const { size } = await file.stat();
  const prefix = new Uint8Array(8);
  if (size >= 8) await readExactly(file, prefix, 0);
  const headerBytes = new Uint8Array(headerLengthOf(prefix, size, path));
  await readExactly(file, headerBytes, 8);
  return parseHeader(headerBytes, size, path);
}

/** Opens for reading; a missing file is an error that says so in one line. */
async function openForReading(path: string): Promise<FileHandle> {
  try {
    return await open(path, "r");
  } catch (error) {
    if (isNotFound(error)) throw new Error(`${path}: not found`);
    throw error;
  }
}

/** Reads and validates only the header: names, dtypes, shapes and metadata, without the data. */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  const file = await openForReading(path);
  try {
    return await readFileHeader(file, path);
  } finally {
    await file.close();
  }
}

/** The tensor's entry, if it exists and has a dtype we convert. */
function readableEntry(
  path: string,
  header: SafetensorsHeader,
  key: string,
): TensorInfo & { dtype: FloatDtype } {
  const info = header.tensors.get(key);
  if (!info) throw new Error(`${path}: tensor "${key}" is missing`);
  const { dtype } = info;
  if (!isFloatDtype(dtype)) {
    throw new Error(
      `${path}: tensor "${key}" has dtype ${dtype}; only ${FLOAT_DTYPES.join(", ")} can be loaded`,
    );
  }
  return { ...info, dtype };
}

async function readTensorBytes(
  file: FileHandle,
  header: SafetensorsHeader,
  info: TensorInfo,
): Promise<Uint8Array> {
  const [begin, end] = info.dataOffsets;
  // A fresh buffer per tensor is aligned, so F32 (BF16) data becomes a typed array without a copy.
  const bytes = new Uint8Array(end - begin);
  await readExactly(file, bytes, header.dataStart + begin);
  return bytes;
}

async function readTensor(
  file: FileHandle,
  header: SafetensorsHeader,
  info: TensorInfo & { dtype: FloatDtype },
) {
  const bytes = await readTensorBytes(file, header, info);
  return { dtype: info.dtype, shape: info.shape, data: decodeFloats(bytes, info.dtype) };
}

/**
 * Reads a safetensors file into float32 tensors. With `keys`, only those tensors are
 * read (each must exist); the whole header is validated either way.
 */
export async function readSafetensors(
  path: string,
  options: { keys?: readonly string[] } = {},
): Promise<SafetensorsContents> {
  const file = await openForReading(path);
  try {
    const header = await readFileHeader(file, path);
    const keys = options.keys ?? [...header.tensors.keys()];
    // Every key is checked before any data is read, so a bad file fails fast.
    const entries = keys.map((key) => [key, readableEntry(path, header, key)] as const);
    const tensors = new Map<string, LoadedTensor>();
    for (const [key, info] of entries) tensors.set(key, await readTensor(file, header, info));
    return { metadata: header.metadata, tensors };
  } finally {
    await file.close();
  }
}

/**
 * Reads `keys` as the engine holds weights: those in `asBf16` as bfloat16 bits
 * (BF16 data exactly as stored, with no float32 round trip; F32 and F16 rounded
 * once to nearest even), the rest as float32. Checks as readSafetensors.
 */
export async function readSafetensorsWeights(
  path: string,
  keys: readonly string[],
  asBf16: ReadonlySet<string>,
): Promise<Map<string, WeightArray>> {
  const file = await openForReading(path);
  try {
    const header = await readFileHeader(file, path);
    const entries = keys.map((key) => [key, readableEntry(path, header, key)] as const);
    const tensors = new Map<string, WeightArray>();
    for (const [key, info] of entries) {
      const bytes = await readTensorBytes(file, header, info);
      tensors.set(key, asBf16.has(key) ? decodeToBf16(bytes, info.dtype) : decodeFloats(bytes, info.dtype));
    }
    return tensors;
  } finally {
    await file.close();
  }
}

function checkTensorToWrite(path: string, name: string, tensor: TensorToWrite): FloatDtype {
  const dtype = tensor.dtype ?? "F32";
  if (name === "" || name === METADATA_KEY)
    throw new Error(`${path}: ${describeValue(name)} is not a tensor name`);
  if (!isFloatDtype(dtype))
    throw new Error(`${path}: tensor "${name}": cannot write dtype ${describeValue(dtype)}`);
  if (!tensor.shape.every((dim) => Number.isInteger(dim) && dim >= 0)) {
    throw new Error(`${path}: tensor "${name}": shape [${tensor.shape.join(", ")}] is not a list of sizes`);
  }
  if (elementCount(tensor.shape) !== tensor.data.length) {
    throw new Error(
      `${path}: tensor "${name}": shape [${tensor.shape.join(", ")}] holds ${elementCount(tensor.shape)} values ` +
        `but data has ${tensor.data.length}`,
    );
  }
  return dtype;
}

/**
 * Lays tensors out like the reference writer: wider dtypes first, then by name, so
 * every tensor starts aligned to its element size and the bytes do not depend on
 * the order the caller listed them in.
 */
function planLayout(path: string, tensors: TensorsToWrite): PlannedTensor[] {
  const entries: [string, TensorToWrite][] = Array.isArray(tensors)
    ? tensors.map((tensor) => [tensor.name, tensor])
    : tensors instanceof Map
      ? [...tensors]
      : Object.entries(tensors);
  const names = new Set<string>();
  for (const [name] of entries) {
    if (names.has(name)) throw new Error(`${path}: tensor "${name}" is listed twice`);
    names.add(name);
  }
  const planned = entries.map(([name, tensor]) => ({
    name,
    dtype: checkTensorToWrite(path, name, tensor),
    shape: tensor.shape,
    data: tensor.data,
  }));
  return planned.sort(
    (a, b) =>
      FLOAT_DTYPE_BYTES[b.dtype] - FLOAT_DTYPE_BYTES[a.dtype] ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/**
 * Validates and lays out the tensors (throwing here, before any file exists), then
 * gives the bytes as chunks: length prefix, padded header, each tensor's data,
 * converted one tensor at a time so a large model is never copied whole.
 */
function safetensorsChunks(
  source: string,
  tensors: TensorsToWrite,
  metadata: Readonly<Record<string, string>> | undefined,
): Iterable<Uint8Array> {
  const planned = planLayout(source, tensors);
  const { prefix, padded } = encodeHeader(planned, metadata);
  return (function* () {
    yield prefix;
    yield padded;
    for (const tensor of planned) yield encodeFloats(tensor.data, tensor.dtype);
  })();
}

/**
 * Writes tensors (each stored as F32, F16 or BF16, rounded to nearest even) and
 * optional string metadata to `path`, atomically.
 */
export async function writeSafetensors(
  path: string,
  tensors: TensorsToWrite,
  metadata?: Readonly<Record<string, string>>,
): Promise<WrittenFile> {
  const chunks = safetensorsChunks(path, tensors, metadata);
  return writeFileAtomically(path, async (write) => {
    for (const chunk of chunks) await write(chunk);
  });
}

/** The bytes of a safetensors file, in memory (for small files: adapters, snapshots). */
export function encodeSafetensors(
  tensors: TensorsToWrite,
  metadata?: Readonly<Record<string, string>>,
): Uint8Array {
  const chunks = [...safetensorsChunks("safetensors", tensors, metadata)];
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/**
 * Parses safetensors bytes held in memory, with the same checks as readSafetensors.
 * `source` names the bytes in errors. Tensors are copies: they never alias `bytes`.
 */
export function decodeSafetensors(bytes: Uint8Array, source = "safetensors"): SafetensorsContents {
  const headerLength = headerLengthOf(bytes.subarray(0, 8), bytes.byteLength, source);
  const header = parseHeader(bytes.subarray(8, 8 + headerLength), bytes.byteLength, source);
  const tensors = new Map<string, LoadedTensor>();
  for (const key of header.tensors.keys()) {
    const info = readableEntry(source, header, key);
    const [begin, end] = info.dataOffsets;
    const data = decodeFloats(bytes.slice(header.dataStart + begin, header.dataStart + end), info.dtype);
    tensors.set(key, { dtype: info.dtype, shape: info.shape, data });
  }
  return { metadata: header.metadata, tensors };
}

/** sha256 (hex) of a file's bytes, streamed. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest("hex");
}
