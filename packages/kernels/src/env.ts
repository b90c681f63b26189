// The kernels' one setting from the environment. Validated by hand: the kernels
// package depends on nothing but its native build tools (no zod).

export interface KernelsEnv {
  /** A specific native build to load (e.g. build-noblas/…), relative to the package. */
  OPENTINKER_KERNELS_ADDON?: string;
}

export function readKernelsEnv(source: NodeJS.ProcessEnv = process.env): KernelsEnv {
  const addon = source.OPENTINKER_KERNELS_ADDON;
  return addon ? { OPENTINKER_KERNELS_ADDON: addon } : {};
}
