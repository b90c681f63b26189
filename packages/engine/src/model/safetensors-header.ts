// The safetensors header: validating one that was read (before any data is
// touched) and encoding one for tensors about to be written. The format is in
// safetensors.ts; this holds every rule about the JSON and the byte layout.
import { z } from "zod";
import { describeValue, parseWithSchema } from "./files.ts";
import { FLOAT_DTYPE_BYTES, type FloatDtype } from "./float-convert.ts";

/** Element size of every dtype the format defines, so a header validates even with tensors we never convert. */
const DTYPE_BYTES: Readonly<Record<string, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  F8_E8M0: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

// The reference implementation refuses headers above 100 MB; so do we, before allocating.
const MAX_HEADER_BYTES = 100_000_000;
export const METADATA_KEY = "__metadata__";

export interface TensorInfo {
  dtype: string;
  shape: number[];
  /** [begin, end) in bytes, relative to the start of the data section. */
  dataOffsets: [number, number];
}

export interface SafetensorsHeader {
  metadata: Record<string, string>;
  tensors: Map<string, TensorInfo>;
  /** Absolute file offset of the data section (8 + header length). */
  dataStart: number;
}

const TensorEntrySchema = z.object({
  dtype: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
});
const MetadataSchema = z.record(z.string(), z.string());

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** Validates the 8-byte prefix against the total size; returns the header length. */
export function headerLengthOf(prefix: Uint8Array, size: number, source: string): number {
  if (size < 8) throw new Error(`${source}: ${size} bytes is too short for the 8-byte header length`);
  const headerLength = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (headerLength > BigInt(size - 8)) {
    throw new Error(`${source}: header length ${headerLength} runs past the end of the file (${size} bytes)`);
  }
  if (headerLength > BigInt(MAX_HEADER_BYTES)) {
    throw new Error(`${source}: header length ${headerLength} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  }
  return Number(headerLength);
}

function parseHeaderJson(headerBytes: Uint8Array, source: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${source}: header is not valid UTF-8 JSON (${reason})`);
  }
}

function parseEntry(path: string, key: string, value: unknown): TensorInfo {
  const entry = parseWithSchema(TensorEntrySchema, value, `${path}: tensor "${key}"`);
  const itemBytes = DTYPE_BYTES[entry.dtype];
  if (itemBytes === undefined)
    throw new Error(`${path}: tensor "${key}": unknown dtype ${describeValue(entry.dtype)}`);
  const [begin, end] = entry.data_offsets;
  if (begin > end) throw new Error(`${path}: tensor "${key}": data_offsets [${begin}, ${end}] are reversed`);
  const expected = elementCount(entry.shape) * itemBytes;
  if (expected !== end - begin) {
    throw new Error(
      `${path}: tensor "${key}": shape [${entry.shape.join(", ")}] of ${entry.dtype} needs ${expected} bytes ` +
        `but data_offsets [${begin}, ${end}] span ${end - begin}`,
    );
  }
  return { dtype: entry.dtype, shape: entry.shape, dataOffsets: [begin, end] };
}

/** Tensors must tile the data section exactly: in range, no overlap, no unowned bytes (as the spec requires). */
function checkLayout(path: string, tensors: Map<string, TensorInfo>, dataLength: number): void {
  const byOffset = [...tensors].sort(([, a], [, b]) => a.dataOffsets[0] - b.dataOffsets[0]);
  let previousEnd = 0;
  let previousKey = "";
  for (const [key, { dataOffsets }] of byOffset) {
    const [begin, end] = dataOffsets;
    if (end > dataLength) {
      throw new Error(
        `${path}: tensor "${key}": data_offsets [${begin}, ${end}] run past the data section (${dataLength} bytes)`,
      );
    }
    if (begin < previousEnd) throw new Error(`${path}: tensor "${key}" overlaps tensor "${previousKey}"`);
    if (begin > previousEnd) {
      throw new Error(`${path}: bytes ${previousEnd}..${begin} before tensor "${key}" belong to no tensor`);
    }
    previousEnd = end;
    previousKey = key;
  }
  if (previousEnd !== dataLength) {
    throw new Error(`${path}: ${dataLength - previousEnd} bytes after the last tensor belong to no tensor`);
  }
}

/** Validates the header bytes completely, given the total size of the file. */
export function parseHeader(headerBytes: Uint8Array, size: number, source: string): SafetensorsHeader {
  const json = parseHeaderJson(headerBytes, source);
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new Error(`${source}: header must be a JSON object (got ${describeValue(json)})`);
  }
  let metadata: Record<string, string> = {};
  const tensors = new Map<string, TensorInfo>();
  for (const [key, value] of Object.entries(json)) {
    if (key === METADATA_KEY) metadata = parseWithSchema(MetadataSchema, value, `${source}: ${METADATA_KEY}`);
    else tensors.set(key, parseEntry(source, key, value));
  }
  const dataStart = 8 + headerBytes.byteLength;
  checkLayout(source, tensors, size - dataStart);
  return { metadata, tensors, dataStart };
}

export interface PlannedTensor {
  name: string;
  dtype: FloatDtype;
  shape: readonly number[];
  data: Float32Array;
}

/** Header JSON padded with spaces so the data starts on an 8-byte boundary (as the spec recommends). */
export function encodeHeader(
  planned: PlannedTensor[],
  metadata: Readonly<Record<string, string>> | undefined,
) {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header[METADATA_KEY] = { ...metadata };
  let offset = 0;
  for (const tensor of planned) {
    const byteLength = tensor.data.length * FLOAT_DTYPE_BYTES[tensor.dtype];
    header[tensor.name] = {
      dtype: tensor.dtype,
      shape: [...tensor.shape],
      data_offsets: [offset, offset + byteLength],
    };
    offset += byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = new Uint8Array(Math.ceil(json.byteLength / 8) * 8).fill(0x20);
  padded.set(json);
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(padded.byteLength), true);
  return { prefix, padded };
}
