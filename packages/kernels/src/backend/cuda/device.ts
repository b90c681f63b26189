// A CUDA device as the addons present it (cuda/addon/device_binding.cc): memory
// by address, copies, and the kernels' launchers by name. The real addon opens
// GPUs; the emulated one (build-cuda/opentinker_kernels_cuda_emu.node) opens one
// device over host memory whose launchers run the same kernels in the CPU
// execution, for tests.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readKernelsEnv } from "../../env.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const require = createRequire(import.meta.url);

/**
 * The emulated device's addon: where `npm ci` (scripts/build-cuda-emu.mjs)
 * puts it, or OPENTINKER_KERNELS_CUDA_EMU_ADDON (relative to the package).
 */
export const CUDA_EMU_ADDON_FILE = path.resolve(
  PACKAGE_DIR,
  readKernelsEnv().OPENTINKER_KERNELS_CUDA_EMU_ADDON ??
    path.join("build-cuda", "opentinker_kernels_cuda_emu.node"),
);

/** A launcher argument: a device address (null: none), or a number. */
export type LaunchArg = bigint | number | null;

export interface CudaDeviceHandle {
  /** "cuda:0" */
  readonly name: string;
  /** "NVIDIA H100 80GB HBM3", or the emulated device's description. */
  readonly description: string;
  /** A block of at least `bytes` bytes (0n for 0 bytes), zero-filled unless `zero` is false. */
  alloc(bytes: number, zero?: boolean): bigint;
  free(address: bigint): void;
  /** The array's bytes to `address`, complete when this returns. */
  upload(address: bigint, data: ArrayBufferView): void;
  /** `bytes` bytes from `address`, after every launch before it. */
  download(address: bigint, bytes: number): ArrayBuffer;
  copy(dst: bigint, src: bigint, bytes: number): void;
  /** Runs launcher ot_cuda_<name> on the device's stream; throws naming it and the CUDA error. */
  launch(name: string, ...args: LaunchArg[]): void;
  /** The scratch bytes launcher `name` needs for these sizes (its ot_cuda_<name>_workspace_bytes). */
  workspaceBytes(name: string, ...sizes: number[]): number;
  memInfo(): { freeBytes: number; totalBytes: number };
  stats(): { allocatedBytes: number; cachedBytes: number; peakAllocatedBytes: number };
  synchronize(): void;
}

interface DeviceAddon {
  openDevice(index: number): CudaDeviceHandle;
  launchers: string[];
}
/** The emulated CUDA device (tests only), or a message saying how to build it. */
export function openEmulatedDevice(): CudaDeviceHandle {
  if (!existsSync(CUDA_EMU_ADDON_FILE)) {
    throw new Error(
      `the emulated CUDA device is not built (${CUDA_EMU_ADDON_FILE}): run \`npm run build:cuda-emu -w @opentinker/kernels\` (needs cmake and Debian's libboost-context-dev)`,
    );
  }
  return (require(CUDA_EMU_ADDON_FILE) as DeviceAddon).openDevice(0);
}
