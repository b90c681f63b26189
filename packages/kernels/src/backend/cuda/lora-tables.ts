// The multi-LoRA op on a CUDA device: a table is the adapters' A and B
// addresses, ranks and scales as an array of LoraAdapterF32 in device memory
// (cuda/kernels/lora.cuh; its static_asserts pin the 24-byte layout written
// here), and a gradient table the same buffers as LoraGradF32 (16 bytes). The
// op takes each row's slot from the device (BGMV-style, lora_rows.cu), so no
// grouping happens on the host.
import type { LoraAdapterBuffers, LoraTable } from "../backend.ts";
import type { F32, I32 } from "../buffer.ts";
import type { DeviceBuffers } from "./buffers.ts";
import type { CudaDeviceHandle } from "./device.ts";

/** lora.cuh's kLoraMaxRank: the widest rank the kernels take. */
const MAX_RANK = 64;
const ADAPTER_BYTES = 24; // {const float* a; const float* b; int rank; float scale}
const GRAD_BYTES = 16; // {float* da; float* db}

interface DeviceTable {
  adapters: LoraAdapterBuffers[];
  rankStride: number;
  /** The LoraAdapterF32 array, and (made when first used as gradients) the LoraGradF32 one. */
  structs: bigint;
  grads: bigint | null;
}

export class LoraTables {
  private readonly tables = new WeakMap<LoraTable, DeviceTable>();
  private readonly registry = new FinalizationRegistry<bigint[]>((addresses) => {
    for (const a of addresses) this.dev.free(a);
  });

  constructor(
    private readonly dev: CudaDeviceHandle,
    private readonly buffers: DeviceBuffers,
  ) {}

  create(dIn: number, dOut: number, adapters: LoraAdapterBuffers[]): LoraTable {
    const ranks = adapters.map((ad, i) => {
      const rank = ad.a.length / dIn;
      if (!Number.isInteger(rank) || rank < 1 || rank > MAX_RANK || ad.b.length !== dOut * rank) {
        throw new RangeError(
          `LoRA adapter ${i}: A has ${ad.a.length} and B ${ad.b.length} elements, not [r, ${dIn}] and [${dOut}, r] with r in 1..${MAX_RANK}`,
        );
      }
      return rank;
    });
    const bytes = new DataView(new ArrayBuffer(Math.max(1, adapters.length) * ADAPTER_BYTES));
    adapters.forEach((ad, i) => {
      const at = i * ADAPTER_BYTES;
      bytes.setBigUint64(at, this.buffers.address(ad.a), true);
      bytes.setBigUint64(at + 8, this.buffers.address(ad.b), true);
      bytes.setInt32(at + 16, ranks[i] as number, true);
      bytes.setFloat32(at + 20, ad.scale, true);
    });
    const structs = this.stage(bytes);
    const handle: LoraTable = Object.freeze({ count: adapters.length, dIn, dOut, ranks });
    const table: DeviceTable = {
      adapters: [...adapters],
      rankStride: Math.max(1, ...ranks),
      structs,
      grads: null,
    };
    this.tables.set(handle, table);
    this.registry.register(handle, [structs]);
    return handle;
  }

  forward(x: F32, n: number, slots: I32, handle: LoraTable, y: F32): void {
    const t = this.table(handle);
    if (handle.count === 0 || n === 0) return;
    this.withWorkspace(this.dev.workspaceBytes("lora_rows_forward_f32", n, handle.dIn, t.rankStride), (ws) =>
      this.dev.launch(
        "lora_rows_forward_f32",
        this.buffers.address(x),
        this.buffers.address(y),
        n,
        handle.dIn,
        handle.dOut,
        this.buffers.address(slots),
        t.structs,
        handle.count,
        t.rankStride,
        ws,
      ),
    );
  }

  backward(
    x: F32,
    dy: F32,
    n: number,
    slots: I32,
    handle: LoraTable,
    dx: F32 | null,
    grads: LoraTable,
  ): void {
    const t = this.table(handle);
    if (grads.count !== handle.count) {
      throw new RangeError(`loraBackward: ${grads.count} gradient entries for ${handle.count} adapters`);
    }
    if (handle.count === 0 || n === 0) return;
    const g = this.gradStructs(grads);
    const bytes = this.dev.workspaceBytes("lora_rows_backward_f32", n, handle.dIn, handle.dOut, t.rankStride);
    this.withWorkspace(bytes, (ws) =>
      this.dev.launch(
        "lora_rows_backward_f32",
        this.buffers.address(x),
        this.buffers.address(dy),
        this.buffers.optional(dx),
        n,
        handle.dIn,
        handle.dOut,
        this.buffers.address(slots),
        t.structs,
        g,
        handle.count,
        t.rankStride,
        ws,
      ),
    );
  }

  private table(handle: LoraTable): DeviceTable {
    const t = this.tables.get(handle);
    if (!t) throw new TypeError("a LoRA table not made by this backend");
    return t;
  }

  /** The table's buffers as gradient targets (dA = its A, dB = its B), built once. */
  private gradStructs(handle: LoraTable): bigint {
    const t = this.table(handle);
    if (t.grads === null) {
      const bytes = new DataView(new ArrayBuffer(Math.max(1, t.adapters.length) * GRAD_BYTES));
      t.adapters.forEach((ad, i) => {
        bytes.setBigUint64(i * GRAD_BYTES, this.buffers.address(ad.a), true);
        bytes.setBigUint64(i * GRAD_BYTES + 8, this.buffers.address(ad.b), true);
      });
      t.grads = this.stage(bytes);
      this.registry.register(handle, [t.grads]);
    }
    return t.grads;
  }

  private stage(bytes: DataView): bigint {
    const address = this.dev.alloc(bytes.byteLength);
    this.dev.upload(address, new Uint8Array(bytes.buffer));
    return address;
  }

  /** The launch's scratch (not zeroed: the kernels write their partial sums before reading them). */
  private withWorkspace(bytes: number, fn: (address: bigint) => void): void {
    const address = this.dev.alloc(bytes, false);
    try {
      fn(address);
    } finally {
      if (address !== 0n) this.dev.free(address);
    }
  }
}
