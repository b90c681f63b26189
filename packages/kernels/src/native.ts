// Hand-written types of the native addon's exports: the core functions of
// src/binding.cc plus one interface per kernel module (declared next to its
// wrappers in src/ops/*.ts, mirroring src/cpu/*_binding.cc).
import type { KernelsIsa } from "./env.ts";
import type { AttentionBinding } from "./ops/attention.ts";
import type { ElementwiseBinding } from "./ops/elementwise.ts";
import type { GemmBinding } from "./ops/gemm.ts";
import type { GemmBf16Binding } from "./ops/gemm-bf16.ts";
import type { LoraBinding } from "./ops/lora.ts";
import type { LossBinding } from "./ops/loss.ts";
import type { OptimBinding } from "./ops/optim.ts";
import type { SampleBinding } from "./ops/sample.ts";

export interface AddonInfo {
  backend: "cpu";
  /** "openblas" when the addon was built against it, else null. */
  blas: string | null;
  /**
   * The kernels OpenBLAS picked for this CPU (e.g. "SkylakeX", "Haswell"; "Prescott"
   * is its SSE3 fallback for a CPU it does not recognise), else null.
   */
  blasCore: string | null;
  /**
   * The instruction set the addon's own kernels run on, chosen when it loads:
   * "avx512", "avx2+fma" (forced by OPENTINKER_KERNELS_ISA, or the CPU's best), or
   * "scalar" on a CPU that is not x86-64 ("avx512" on the "amx" path too).
   */
  simd: string;
  /** The kernels' path on x86-64 (absent elsewhere): what OPENTINKER_KERNELS_ISA forces. */
  isa?: KernelsIsa;
  threads: number;
  /** The panel width of f32 weights packed on this path (packWeight): 16 on AVX2, 32 on AVX-512. */
  packedNr: number;
}

export interface CoreBinding {
  info(): AddonInfo;
  setNumThreads(threads: number): void;
  /** Forces the kernels' instruction set; throws when the CPU lacks it. The loader calls it. */
  selectIsa(isa: KernelsIsa): void;
  /** Asks for huge pages behind a large buffer not yet touched (Linux); false where it cannot. */
  adviseHugePages(buffer: Float32Array): boolean;
}

export type NativeKernels = CoreBinding &
  GemmBinding &
  GemmBf16Binding &
  LoraBinding &
  AttentionBinding &
  ElementwiseBinding &
  LossBinding &
  OptimBinding &
  SampleBinding;
