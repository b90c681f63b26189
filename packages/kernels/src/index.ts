// @opentinker/kernels: the native kernels behind the engine. Buffers are
// Float32Array (zero copy), row-major, with shapes in each function's comment.
import { loadNative } from "./loader.ts";
import type { AddonInfo } from "./native.ts";

export {
  type CudaAddon,
  type CudaAddonLoad,
  type CudaDevice,
  type CudaProbe,
  loadCudaAddon,
} from "./cuda-addon.ts";
export {
  readKernelsEnv,
  WEIGHT_DTYPE_CHOICES,
  WEIGHT_DTYPES,
  type WeightDtype,
  type WeightDtypeChoice,
} from "./env.ts";
export { loadNative } from "./loader.ts";
export { type MachineInfo, machineInfo } from "./machine.ts";
export type { AddonInfo } from "./native.ts";
export * from "./ops/attention.ts";
export * from "./ops/elementwise.ts";
export * from "./ops/gemm.ts";
export * from "./ops/gemm-bf16.ts";
export * from "./ops/lora.ts";
export * from "./ops/loss.ts";
export * from "./ops/optim.ts";
export * from "./ops/sample.ts";

/** Which build is loaded: backend, BLAS, SIMD level and thread count. */
export function kernelInfo(): AddonInfo {
  return loadNative().info();
}

/** Sets the size of the kernels' thread pool (default: every core). */
export function setKernelThreads(threads: number): void {
  loadNative().setNumThreads(threads);
}

// The device seam (issue 45): the engine runs on these. Its LoraTable and
// PackedWeight are the backend's handles (they shadow the CPU ops' own types).
export type {
  AdamwHyper,
  Backend,
  BlockCopy,
  DeviceInfo,
  KvCache,
  LoraAdapterBuffers,
  LoraTable,
  PackedWeight,
  PagedRowBuffers,
} from "./backend/backend.ts";
export {
  bytesPerElement,
  type DeviceBuffer,
  type DType,
  type DTypeOf,
  elementCount,
  type F32,
  type HostArray,
  type I32,
  type Weight,
} from "./backend/buffer.ts";
export { CpuBackend } from "./backend/cpu.ts";
export { CudaBackend } from "./backend/cuda/cuda.ts";
export {
  type DeviceChoice,
  parseDeviceChoice,
  type SelectedBackend,
  selectBackend,
} from "./backend/select.ts";
