// Device buffers of the CUDA backend: each handle maps (privately) to a device
// address and, for a buffer that owns its memory, the allocation to free. A
// view is an address inside its parent's allocation and owns nothing.
import { bufferHandle, bytesPerElement, type DeviceBuffer, type DType, elementCount } from "../buffer.ts";
import type { CudaDeviceHandle } from "./device.ts";

interface Place {
  address: bigint;
  /** The allocation this buffer frees, or null for a view. */
  owned: bigint | null;
}

export class DeviceBuffers {
  private readonly places = new WeakMap<object, Place>();

  constructor(
    private readonly device: CudaDeviceHandle,
    private readonly name: string,
  ) {}

  /** A new buffer, zero-filled unless `zero` is false (scratch a launch writes whole). */
  alloc<D extends DType>(dtype: D, shape: readonly number[], zero = true): DeviceBuffer<D> {
    const length = elementCount(shape);
    const address = this.device.alloc(length * bytesPerElement(dtype), zero);
    return this.make(dtype, shape, length, { address, owned: address });
  }

  /** A handle over `address` (inside a parent's allocation). */
  view<D extends DType>(parent: DeviceBuffer<D>, offset: number, shape: readonly number[]): DeviceBuffer<D> {
    const base = this.address(parent);
    const length = elementCount(shape);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > parent.length) {
      throw new RangeError(
        `view [${shape.join(", ")}] at ${offset} is outside a buffer of ${parent.length} elements`,
      );
    }
    const address = base + BigInt(offset * bytesPerElement(parent.dtype));
    return this.make(parent.dtype, shape, length, { address, owned: null });
  }

  /** The device address of one of this backend's buffers. */
  address(buffer: DeviceBuffer): bigint {
    const place = this.places.get(buffer);
    const what = `a ${buffer.device} buffer [${buffer.shape.join(", ")}]`;
    if (buffer.device !== this.name) throw new TypeError(`${what} was given to the ${this.name} backend`);
    if (!place) throw new TypeError(`${what} was used after it was freed, or not made by a backend`);
    return place.address;
  }

  /** The address of an optional buffer (null stays null: the launcher's "none"). */
  optional(buffer: DeviceBuffer | null): bigint | null {
    return buffer === null ? null : this.address(buffer);
  }

  free(buffer: DeviceBuffer): void {
    this.address(buffer);
    const place = this.places.get(buffer) as Place;
    this.places.delete(buffer);
    if (place.owned !== null && place.owned !== 0n) this.device.free(place.owned);
  }

  private make<D extends DType>(
    dtype: D,
    shape: readonly number[],
    length: number,
    place: Place,
  ): DeviceBuffer<D> {
    const buffer = bufferHandle(this.name, dtype, shape, length);
    this.places.set(buffer, place);
    return buffer;
  }
}
