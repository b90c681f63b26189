// float32 ⇄ float16 / bfloat16 bit conversions. Safetensors stores little-endian
// data, and we view it through typed arrays (native order), so a big-endian host
// is refused rather than read wrongly.
import { endianness } from "node:os";

export type FloatDtype = "F32" | "F16" | "BF16";

export const FLOAT_DTYPES: readonly FloatDtype[] = ["F32", "F16", "BF16"];

export const FLOAT_DTYPE_BYTES: Readonly<Record<FloatDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

export function isFloatDtype(value: unknown): value is FloatDtype {
  return value === "F32" || value === "F16" || value === "BF16";
}

function assertLittleEndian(): void {
  if (endianness() !== "LE") throw new Error("safetensors conversion needs a little-endian host");
}

let f16Table: Float32Array | undefined;

/** All 65536 half-precision values, built once: decoding is then one lookup per element. */
function halfToFloatTable(): Float32Array {
  if (f16Table) return f16Table;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >>> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) table[h] = sign * mantissa * 2 ** -24;
    else if (exponent === 0x1f) table[h] = mantissa === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
    else table[h] = sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  f16Table = table;
  return table;
}

/** Rounds the right-shifted-away bits to nearest, ties to even. */
function roundShift(value: number, shift: number): number {
  const kept = value >>> shift;
  const rest = value & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  return rest > half || (rest === half && (kept & 1) === 1) ? kept + 1 : kept;
}

/** float32 bits → float16 bits, round to nearest even; overflow becomes ±infinity. */
export function floatBitsToHalf(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | (mantissa === 0 ? 0x7c00 : 0x7e00);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent > 0) {
    // A carry out of the mantissa bumps the exponent, up to infinity: the right answer.
    return sign | ((halfExponent << 10) + roundShift(mantissa, 13));
  }
  // Subnormal half: below half the smallest subnormal everything rounds to zero.
  if (halfExponent < -10) return sign;
  return sign | roundShift(mantissa | 0x800000, 14 - halfExponent);
}

/** float32 bits → bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN. */
export function floatBitsToBfloat16(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** A typed-array view needs an aligned offset; copy the bytes when they are not. */
function aligned(bytes: Uint8Array, alignment: number): Uint8Array {
  return bytes.byteOffset % alignment === 0 ? bytes : bytes.slice();
}

/** bfloat16 bits → float32 values (exact: the bits are the float's top half). */
export function bf16ToFloats(halves: Uint16Array): Float32Array {
  const out = new Float32Array(halves.length);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < halves.length; i++) outBits[i] = (halves[i] ?? 0) << 16;
  return out;
}

/** float32 values → bfloat16 bits, each rounded to nearest even. */
export function floatsToBf16(data: Float32Array): Uint16Array {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = new Uint16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = floatBitsToBfloat16(bits[i] ?? 0);
  return out;
}

/**
 * Little-endian bytes of one dtype → bfloat16 bits: BF16 data as stored (a view,
 * without copying, when aligned), other dtypes rounded once to nearest even.
 */
export function decodeToBf16(bytes: Uint8Array, dtype: FloatDtype): Uint16Array {
  if (dtype !== "BF16") return floatsToBf16(decodeFloats(bytes, dtype));
  assertLittleEndian();
  if (bytes.byteLength % 2 !== 0)
    throw new Error(`${bytes.byteLength} bytes is not a whole number of BF16 values`);
  const source = aligned(bytes, 2);
  return new Uint16Array(source.buffer, source.byteOffset, source.byteLength / 2);
}

/** Little-endian bytes of one dtype → float32 values (a view, without copying, for aligned F32). */
export function decodeFloats(bytes: Uint8Array, dtype: FloatDtype): Float32Array {
  assertLittleEndian();
  const size = FLOAT_DTYPE_BYTES[dtype];
  if (bytes.byteLength % size !== 0) {
    throw new Error(`${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  }
  const source = aligned(bytes, size);
  const count = bytes.byteLength / size;
  if (dtype === "F32") return new Float32Array(source.buffer, source.byteOffset, count);
  const halves = new Uint16Array(source.buffer, source.byteOffset, count);
  if (dtype === "BF16") return bf16ToFloats(halves);
  const out = new Float32Array(count);
  const table = halfToFloatTable();
  for (let i = 0; i < count; i++) out[i] = table[halves[i] ?? 0] ?? 0;
  return out;
}

/** float32 values → little-endian bytes of one dtype (a view, without copying, for F32). */
export function encodeFloats(data: Float32Array, dtype: FloatDtype): Uint8Array {
  assertLittleEndian();
  if (dtype === "F32") return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = new Uint16Array(data.length);
  const convert = dtype === "F16" ? floatBitsToHalf : floatBitsToBfloat16;
  for (let i = 0; i < data.length; i++) out[i] = convert(bits[i] ?? 0);
  return new Uint8Array(out.buffer);
}

/** The values a tensor holds after a trip through `dtype` (always a new array). */
export function roundToDtype(data: Float32Array, dtype: FloatDtype): Float32Array {
  return dtype === "F32" ? data.slice() : decodeFloats(encodeFloats(data, dtype), dtype);
}
