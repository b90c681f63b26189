// A step's working memory on the backend: every activation and tape buffer of
// one pass comes from here and goes back at once when the step is done, so a
// device's memory holds one step's activations at a time, never a leak of them.
import type { Backend, DeviceBuffer, DType, DTypeOf, HostArray } from "@opentinker/kernels";

export class Arena {
  private held: DeviceBuffer[] = [];

  constructor(readonly backend: Backend) {}

  /** A zero-filled buffer that lives until release(). */
  alloc<D extends DType>(dtype: D, shape: readonly number[]): DeviceBuffer<D> {
    const buffer = this.backend.alloc(dtype, shape);
    this.held.push(buffer);
    return buffer;
  }

  f32(...shape: number[]): DeviceBuffer<"f32"> {
    return this.alloc("f32", shape);
  }

  /** A step input on the device, until release(). */
  upload<A extends HostArray>(data: A, shape?: readonly number[]): DeviceBuffer<DTypeOf<A>> {
    const buffer = this.backend.upload(data, shape);
    this.held.push(buffer);
    return buffer;
  }

  /** Takes a buffer an op returned into the arena's keeping. */
  adopt<B extends DeviceBuffer>(buffer: B): B {
    this.held.push(buffer);
    return buffer;
  }

  /** Gives every buffer back; none may be used afterwards. */
  release(): void {
    for (const buffer of this.held.splice(0)) this.backend.free(buffer);
  }
}
