// The strict test backend (issue 45): the CPU backend's kernels and numbers,
// with a device's discipline. Its buffers refuse host access except through
// download; upload and download copy (so code that leans on the CPU's zero-copy
// aliasing breaks here as it would on a GPU); every transfer is logged, so a
// test can say "between a step's inputs and its tokens, nothing came back".

import type { DeviceBuffer, DType, DTypeOf, HostArray } from "./buffer.ts";
import { bytesPerElement } from "./buffer.ts";
import { CpuBackend } from "./cpu.ts";

export interface Transfer {
  direction: "upload" | "download";
  dtype: DType;
  shape: readonly number[];
  bytes: number;
}

export class HostAccessError extends Error {
  override name = "HostAccessError";
}

export class StrictBackend extends CpuBackend {
  /** Every upload and download since the last take(), in order. */
  private log: Transfer[] = [];

  constructor() {
    super("strict");
  }

  /** The transfers since the last call, and a fresh log. */
  takeTransfers(): Transfer[] {
    const taken = this.log;
    this.log = [];
    return taken;
  }

  private record(direction: Transfer["direction"], buffer: DeviceBuffer): void {
    this.log.push({
      direction,
      dtype: buffer.dtype,
      shape: buffer.shape,
      bytes: buffer.length * bytesPerElement(buffer.dtype),
    });
  }

  override host<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    throw new HostAccessError(
      `host access to a ${buffer.dtype} buffer [${buffer.shape.join(", ")}] outside download: on a device this memory is not the host's`,
    );
  }

  override wrap<A extends HostArray>(data: A, shape?: readonly number[]): DeviceBuffer<DTypeOf<A>> {
    return super.wrap(data.slice() as A, shape);
  }

  override upload<A extends HostArray>(data: A, shape?: readonly number[]): DeviceBuffer<DTypeOf<A>> {
    const buffer = this.wrap(data, shape);
    this.record("upload", buffer);
    return buffer;
  }

  override write<D extends DType>(target: DeviceBuffer<D>, data: HostArray<D>, offset = 0): void {
    super.write(target, data, offset);
    this.log.push({
      direction: "upload",
      dtype: target.dtype,
      shape: [data.length],
      bytes: data.length * bytesPerElement(target.dtype),
    });
  }

  override download<D extends DType>(buffer: DeviceBuffer<D>): HostArray<D> {
    this.record("download", buffer);
    return super.download(buffer).slice() as HostArray<D>;
  }

  /** Σx² comes back as one scalar: logged as a download of one f64. */
  override sumOfSquares(buffers: Parameters<CpuBackend["sumOfSquares"]>[0]): number {
    this.log.push({ direction: "download", dtype: "f64", shape: [1], bytes: 8 });
    return super.sumOfSquares(buffers);
  }
}
