import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type KernelsEnv, readKernelsEnv } from "./env.ts";
import type { NativeKernels } from "./native.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

/**
 * Candidate builds, best first; today the CPU build is the only one (the CUDA
 * addon is a separate build with its own loader: cuda-addon.ts).
 * OPENTINKER_KERNELS_ADDON names a specific build (e.g. build-noblas/…) instead.
 */
function candidates(env: KernelsEnv): string[] {
  const chosen = env.OPENTINKER_KERNELS_ADDON;
  if (chosen) return [path.resolve(PACKAGE_DIR, chosen)];
  return [path.join(PACKAGE_DIR, "build", "Release", "opentinker_kernels.node")];
}

let loaded: NativeKernels | undefined;

/** OPENTINKER_KERNELS_ISA, applied once before any kernel runs (the kernels pick one path per process). */
function selectIsa(native: NativeKernels, env: KernelsEnv): void {
  const isa = env.OPENTINKER_KERNELS_ISA;
  if (!isa) return;
  try {
    native.selectIsa(isa);
  } catch (error) {
    throw new Error(
      `@opentinker/kernels: OPENTINKER_KERNELS_ISA=${isa} cannot be used here: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * The native addon, loaded once; throws a message that says how to build it, or
 * what is wrong with OPENTINKER_KERNELS_ISA.
 */
export function loadNative(): NativeKernels {
  if (loaded) return loaded;
  const env = readKernelsEnv();
  const tried: string[] = [];
  for (const file of candidates(env)) {
    if (!existsSync(file)) {
      tried.push(`${file} (not built)`);
      continue;
    }
    let native: NativeKernels;
    try {
      native = require(file) as NativeKernels;
    } catch (error) {
      tried.push(`${file} (${error instanceof Error ? error.message : String(error)})`);
      continue;
    }
    selectIsa(native, env);
    loaded = native;
    return loaded;
  }
  throw new Error(
    `@opentinker/kernels: no usable native build. Tried: ${tried.join("; ")}. ` +
      "Build it with `npm run build:native -w @opentinker/kernels` (needs g++, make and python3; " +
      "OpenBLAS is optional: apt-get install libopenblas-dev).",
  );
}
