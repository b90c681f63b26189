// A minimal GGUF v3 writer (f32 and bf16 tensors): enough for llama.cpp to load our
// random benchmark models. Bench tooling, not product: the engine itself never
// reads or writes GGUF.
//
// Layout (github.com/ggml-org/ggml/blob/master/docs/gguf.md), little-endian:
//   "GGUF" · version u32 · tensor count u64 · metadata count u64
//   metadata: key (string) · value type u32 · value
//   tensor infos: name (string) · n_dims u32 · ne u64[n_dims] · type u32 · offset u64
//   padding to `general.alignment`, then each tensor's data, padded to the alignment
// A string is a u64 byte length and UTF-8 bytes. `ne[0]` is the innermost
// (contiguous) dimension, so a row-major [rows, cols] matrix has ne = [cols, rows].
import { open } from "node:fs/promises";
import { endianness } from "node:os";

export const GGUF_MAGIC = "GGUF";
export const GGUF_VERSION = 3;
export const GGUF_ALIGNMENT = 32;
/** ggml_type of a float32 tensor. */
export const GGML_TYPE_F32 = 0;
/** ggml_type of a bfloat16 tensor. */
export const GGML_TYPE_BF16 = 30;

/** gguf_type: the type tag written before each metadata value. */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

type ScalarKind = "u32" | "i32" | "f32" | "bool" | "string";

/** A metadata value: the subset of GGUF types a Llama-family model needs. */
export type GgufValue =
  | { kind: "u32" | "i32" | "f32"; value: number }
  | { kind: "bool"; value: boolean }
  | { kind: "string"; value: string }
  | { kind: "array"; of: "i32" | "f32"; value: readonly number[] }
  | { kind: "array"; of: "string"; value: readonly string[] };

export const gguf = {
  u32: (value: number): GgufValue => ({ kind: "u32", value }),
  i32: (value: number): GgufValue => ({ kind: "i32", value }),
  f32: (value: number): GgufValue => ({ kind: "f32", value }),
  bool: (value: boolean): GgufValue => ({ kind: "bool", value }),
  string: (value: string): GgufValue => ({ kind: "string", value }),
  strings: (value: readonly string[]): GgufValue => ({ kind: "array", of: "string", value }),
  i32s: (value: readonly number[]): GgufValue => ({ kind: "array", of: "i32", value }),
};

const TYPE_OF: Readonly<Record<ScalarKind, number>> = {
  u32: GgufType.UINT32,
  i32: GgufType.INT32,
  f32: GgufType.FLOAT32,
  bool: GgufType.BOOL,
  string: GgufType.STRING,
};

export interface GgufTensor {
  name: string;
  /** Row-major shape, outermost first (as Hugging Face and PyTorch write it). */
  shape: readonly number[];
  /** F32 (the default) or BF16, whose data is the bf16 bits. */
  type?: "F32" | "BF16";
  /** Called once, when the tensor is written: a permuted copy lives only that long. */
  data: () => Float32Array | Uint16Array;
}

const TYPE_CODE = { F32: GGML_TYPE_F32, BF16: GGML_TYPE_BF16 } as const;
const TYPE_BYTES = { F32: 4, BF16: 2 } as const;

export interface GgufFile {
  /** Written in this order; `general.alignment` is added (32). */
  metadata: ReadonlyMap<string, GgufValue>;
  tensors: readonly GgufTensor[];
}

/** A growable little-endian byte buffer for the header. */
class ByteWriter {
  private buffer = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const next = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(next, 0, 0, this.length);
    this.buffer = next;
  }

  u32(value: number): void {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff)
      throw new RangeError(`gguf: ${value} is not a u32`);
    this.reserve(4);
    this.length = this.buffer.writeUInt32LE(value, this.length);
  }

  i32(value: number): void {
    if (!Number.isInteger(value) || value < -0x80000000 || value > 0x7fffffff)
      throw new RangeError(`gguf: ${value} is not an i32`);
    this.reserve(4);
    this.length = this.buffer.writeInt32LE(value, this.length);
  }

  u64(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`gguf: ${value} is not a u64`);
    this.reserve(8);
    this.length = this.buffer.writeBigUInt64LE(BigInt(value), this.length);
  }

  f32(value: number): void {
    this.reserve(4);
    this.length = this.buffer.writeFloatLE(value, this.length);
  }

  u8(value: number): void {
    this.reserve(1);
    this.length = this.buffer.writeUInt8(value, this.length);
  }

  string(value: string): void {
    const bytes = Buffer.from(value, "utf8");
    this.u64(bytes.length);
    this.reserve(bytes.length);
    this.length += bytes.copy(this.buffer, this.length);
  }

  padTo(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    this.reserve(pad);
    this.buffer.fill(0, this.length, this.length + pad);
    this.length += pad;
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

function writeScalar(out: ByteWriter, kind: ScalarKind, value: number | boolean | string): void {
  if (kind === "string") out.string(value as string);
  else if (kind === "bool") out.u8(value ? 1 : 0);
  else if (kind === "f32") out.f32(value as number);
  else out[kind](value as number);
}

function writeValue(out: ByteWriter, value: GgufValue): void {
  if (value.kind !== "array") {
    out.u32(TYPE_OF[value.kind]);
    writeScalar(out, value.kind, value.value);
    return;
  }
  out.u32(GgufType.ARRAY);
  out.u32(TYPE_OF[value.of]);
  out.u64(value.value.length);
  for (const item of value.value) writeScalar(out, value.of, item);
}

const alignUp = (n: number, alignment: number) => Math.ceil(n / alignment) * alignment;
const elements = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Each tensor's byte offset from the start of the data section: in order, each aligned. */
export function tensorOffsets(tensors: readonly GgufTensor[], alignment = GGUF_ALIGNMENT): number[] {
  let at = 0;
  return tensors.map((t) => {
    const offset = at;
    at = alignUp(at + elements(t.shape) * TYPE_BYTES[t.type ?? "F32"], alignment);
    return offset;
  });
}

function header(file: GgufFile): Buffer {
  if (file.metadata.has("general.alignment"))
    throw new Error("gguf: general.alignment is set by the writer (32)");
  const names = new Set<string>();
  for (const t of file.tensors) {
    if (names.has(t.name)) throw new Error(`gguf: tensor ${t.name} is listed twice`);
    names.add(t.name);
    if (t.shape.length < 1 || t.shape.length > 4 || !t.shape.every((d) => Number.isInteger(d) && d > 0))
      throw new Error(`gguf: tensor ${t.name} has shape [${t.shape.join(", ")}]; need 1–4 positive dims`);
  }
  const out = new ByteWriter();
  out.u32(Buffer.from(GGUF_MAGIC, "ascii").readUInt32LE(0));
  out.u32(GGUF_VERSION);
  out.u64(file.tensors.length);
  out.u64(file.metadata.size + 1);
  out.string("general.alignment");
  writeValue(out, gguf.u32(GGUF_ALIGNMENT));
  for (const [key, value] of file.metadata) {
    out.string(key);
    writeValue(out, value);
  }
  const offsets = tensorOffsets(file.tensors);
  file.tensors.forEach((t, i) => {
    out.string(t.name);
    out.u32(t.shape.length);
    for (const dim of [...t.shape].reverse()) out.u64(dim); // ne[0] is the innermost dimension
    out.u32(TYPE_CODE[t.type ?? "F32"]);
    out.u64(offsets[i] as number);
  });
  out.padTo(GGUF_ALIGNMENT);
  return out.bytes();
}

/**
 * Writes `file` to `path`, streaming one tensor at a time (a 2 GB model never
 * sits in the file buffer whole). Returns the file's size in bytes.
 */
export async function writeGguf(path: string, file: GgufFile): Promise<number> {
  // Typed-array bytes are written as they sit in memory; GGUF is little-endian.
  if (endianness() !== "LE") throw new Error("gguf: writing needs a little-endian machine");
  const head = header(file);
  const handle = await open(path, "w");
  try {
    let at = 0;
    const write = async (bytes: Uint8Array) => {
      await handle.write(bytes, 0, bytes.length, at);
      at += bytes.length;
    };
    await write(head);
    const zeros = new Uint8Array(GGUF_ALIGNMENT);
    for (const t of file.tensors) {
      const data = t.data();
      if ((t.type ?? "F32") === "BF16" ? !(data instanceof Uint16Array) : !(data instanceof Float32Array))
        throw new Error(`gguf: ${t.name} is ${t.type ?? "F32"} but its data is a ${data.constructor.name}`);
      if (data.length !== elements(t.shape))
        throw new Error(
          `gguf: ${t.name} has ${data.length} values, shape [${t.shape.join(", ")}] needs ${elements(t.shape)}`,
        );
      await write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      const pad = (GGUF_ALIGNMENT - (at % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
      if (pad > 0) await write(zeros.subarray(0, pad));
    }
    return at;
  } finally {
    await handle.close();
  }
}
