// The kernels' settings from the environment. Validated by hand: the kernels
// package depends on nothing but its native build tools (no zod).

/** The instruction sets the addon's own kernels have a path for. */
export const KERNELS_ISAS = ["avx2", "avx512", "amx"] as const;
export type KernelsIsa = (typeof KERNELS_ISAS)[number];

/** The paths a CPU whose best is `best` can run, lowest first (KERNELS_ISAS is in that order). */
export function isasUpTo(best: KernelsIsa | undefined): KernelsIsa[] {
  return KERNELS_ISAS.slice(0, best ? KERNELS_ISAS.indexOf(best) + 1 : 1);
}

export interface KernelsEnv {
  /** A specific native build to load (e.g. build-noblas/…), relative to the package. */
  OPENTINKER_KERNELS_ADDON?: string;
  /**
   * The CUDA addon to load instead of build-cuda/opentinker_kernels_cuda.node,
   * relative to the package; "none" loads none (the CPU only).
   */
  OPENTINKER_KERNELS_CUDA_ADDON?: string;
  /** The emulated CUDA device's addon instead of build-cuda/opentinker_kernels_cuda_emu.node, relative to the package. */
  OPENTINKER_KERNELS_CUDA_EMU_ADDON?: string;
  /**
   * Forces the kernels' instruction set (default: the best the CPU has), e.g. to
   * test the AVX2 path on an AVX-512 machine. "amx" is "avx512" plus Intel's AMX
   * tiles for products over packed bf16 weights.
   */
  OPENTINKER_KERNELS_ISA?: KernelsIsa;
  /**
   * How the engine holds frozen base weights: "bf16" (half the bytes; the kernels
   * widen to f32 as they load), "f32", or "stored" (each matrix as its file has
   * it: bf16 when stored BF16, else f32). Unset: the engine's default.
   */
  OPENTINKER_WEIGHT_DTYPE?: WeightDtypeChoice;
  /** OpenBLAS's own setting (log2 of the cycles its idle threads spin), read only to record it. */
  OPENBLAS_THREAD_TIMEOUT?: string;
}

/** The dtypes frozen base weights can be held in. */
export const WEIGHT_DTYPES = ["f32", "bf16"] as const;
export type WeightDtype = (typeof WEIGHT_DTYPES)[number];

/** What OPENTINKER_WEIGHT_DTYPE may name: a dtype, or "stored" (the file's own). */
export const WEIGHT_DTYPE_CHOICES = [...WEIGHT_DTYPES, "stored"] as const;
export type WeightDtypeChoice = (typeof WEIGHT_DTYPE_CHOICES)[number];

function isWeightDtypeChoice(value: string): value is WeightDtypeChoice {
  return (WEIGHT_DTYPE_CHOICES as readonly string[]).includes(value);
}

function isKernelsIsa(value: string): value is KernelsIsa {
  return (KERNELS_ISAS as readonly string[]).includes(value);
}

export function readKernelsEnv(
  source: Readonly<Record<string, string | undefined>> = process.env,
): KernelsEnv {
  const env: KernelsEnv = {};
  const addon = source.OPENTINKER_KERNELS_ADDON;
  if (addon) env.OPENTINKER_KERNELS_ADDON = addon;
  const cudaAddon = source.OPENTINKER_KERNELS_CUDA_ADDON;
  if (cudaAddon) env.OPENTINKER_KERNELS_CUDA_ADDON = cudaAddon;
  const emuAddon = source.OPENTINKER_KERNELS_CUDA_EMU_ADDON;
  if (emuAddon) env.OPENTINKER_KERNELS_CUDA_EMU_ADDON = emuAddon;
  const isa = source.OPENTINKER_KERNELS_ISA;
  if (isa) {
    if (!isKernelsIsa(isa)) {
      throw new Error(
        `OPENTINKER_KERNELS_ISA must be one of ${KERNELS_ISAS.join(", ")} (or unset for the CPU's best), got "${isa}"`,
      );
    }
    env.OPENTINKER_KERNELS_ISA = isa;
  }
  const dtype = source.OPENTINKER_WEIGHT_DTYPE;
  if (dtype) {
    if (!isWeightDtypeChoice(dtype)) {
      throw new Error(
        `OPENTINKER_WEIGHT_DTYPE must be one of ${WEIGHT_DTYPE_CHOICES.join(", ")} (or unset), got "${dtype}"`,
      );
    }
    env.OPENTINKER_WEIGHT_DTYPE = dtype;
  }
  const timeout = source.OPENBLAS_THREAD_TIMEOUT;
  if (timeout) env.OPENBLAS_THREAD_TIMEOUT = timeout;
  return env;
}
