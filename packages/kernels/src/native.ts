// Hand-written types of the native addon's exports: the core functions of
// src/binding.cc plus one interface per kernel module (declared next to its
// wrappers in src/ops/*.ts, mirroring src/cpu/*_binding.cc).
import type { AttentionBinding } from "./ops/attention.ts";
import type { ElementwiseBinding } from "./ops/elementwise.ts";
import type { GemmBinding } from "./ops/gemm.ts";
import type { LoraBinding } from "./ops/lora.ts";
import type { LossBinding } from "./ops/loss.ts";
import type { OptimBinding } from "./ops/optim.ts";
import type { SampleBinding } from "./ops/sample.ts";

export interface AddonInfo {
  backend: "cpu";
  /** "openblas" when the addon was built against it, else null. */
  blas: string | null;
  /** The instruction set of the addon's own kernels ("avx2+fma" or "scalar"). */
  simd: string;
  threads: number;
}

export interface CoreBinding {
  info(): AddonInfo;
  setNumThreads(threads: number): void;
}

export type NativeKernels = CoreBinding &
  GemmBinding &
  LoraBinding &
  AttentionBinding &
  ElementwiseBinding &
  LossBinding &
  OptimBinding &
  SampleBinding;
