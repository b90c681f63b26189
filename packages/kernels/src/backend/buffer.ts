// Buffers that live on a device (issue 45). A buffer is an opaque handle: its
// device, element type and shape are public, its memory is the backend's. Only
// a backend's `download` turns one into a typed array, so code above the seam
// cannot touch device memory by accident (the strict backend checks it).

/** Element types a backend stores. bf16 is 16-bit brain float, held as Uint16Array on the host. */
export type DType = "f32" | "bf16" | "i32" | "f64";

/** The host array type of each element type. */
export interface HostArrays {
  f32: Float32Array;
  bf16: Uint16Array;
  i32: Int32Array;
  f64: Float64Array;
}

export type HostArray<D extends DType = DType> = HostArrays[D];

/** The dtype of a host array type (Uint16Array: bf16). */
export type DTypeOf<A extends HostArray> = A extends Float32Array
  ? "f32"
  : A extends Uint16Array
    ? "bf16"
    : A extends Int32Array
      ? "i32"
      : "f64";

const BYTES: Record<DType, number> = { f32: 4, bf16: 2, i32: 4, f64: 8 };

/** Bytes per element of a dtype. */
export function bytesPerElement(dtype: DType): number {
  return BYTES[dtype];
}

declare const opaque: unique symbol;

/**
 * A backend's buffer: `length` elements of `dtype` laid out row-major as
 * `shape`. `device` names where it lives ("cpu", "cuda:0"). Only backends make
 * them (the brand), and a backend accepts only its own.
 */
export interface DeviceBuffer<D extends DType = DType> {
  readonly device: string;
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly length: number;
  readonly [opaque]: true;
}

/**
 * A new frozen handle (the brand is only a type: a backend keeps where the
 * memory is in its own table, keyed by this object).
 */
export function bufferHandle<D extends DType>(
  device: string,
  dtype: D,
  shape: readonly number[],
  length: number,
): DeviceBuffer<D> {
  return Object.freeze({
    device,
    dtype,
    shape: Object.freeze([...shape]),
    length,
  }) as unknown as DeviceBuffer<D>;
}

export type F32 = DeviceBuffer<"f32">;
export type I32 = DeviceBuffer<"i32">;
/** A frozen weight in either dtype: a layer never branches on how its base weights are stored. */
export type Weight = DeviceBuffer<"f32" | "bf16">;

/** The element count of a shape; throws a message naming the shape when it is not one. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const dim of shape) {
    if (!Number.isSafeInteger(dim) || dim < 0)
      throw new RangeError(`buffer shape [${shape.join(", ")}]: ${dim} is not a size`);
    n *= dim;
  }
  if (!Number.isSafeInteger(n)) throw new RangeError(`buffer shape [${shape.join(", ")}] is too large`);
  return n;
}

/** A new zero-filled host array of `dtype`. */
export function hostArray<D extends DType>(dtype: D, length: number): HostArray<D> {
  switch (dtype) {
    case "f32":
      return new Float32Array(length) as HostArray<D>;
    case "bf16":
      return new Uint16Array(length) as HostArray<D>;
    case "i32":
      return new Int32Array(length) as HostArray<D>;
    default:
      return new Float64Array(length) as HostArray<D>;
  }
}

/** The dtype a host array holds (Uint16Array: bf16). */
export function dtypeOf(array: HostArray): DType {
  if (array instanceof Float32Array) return "f32";
  if (array instanceof Uint16Array) return "bf16";
  if (array instanceof Int32Array) return "i32";
  return "f64";
}
