// What machine a figure was measured on, so every benchmark's output says it:
// the CPU and the instruction-set flags that decide which kernels run (ours and
// the peers'), whether OpenBLAS was there (linked into our addon; installed for
// other programs, such as Debian's PyTorch, which loads whatever libblas.so.3
// points at), and how busy the machine was.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { readKernelsEnv } from "./env.ts";
import { loadNative } from "./loader.ts";
import type { AddonInfo } from "./native.ts";

/** The flags that change which code paths run (x86); others are left out. */
const RELEVANT_FLAGS = [
  "avx",
  "avx2",
  "fma",
  "f16c",
  "avx_vnni",
  "avx512f",
  "avx512bw",
  "avx512dq",
  "avx512vl",
  "avx512_vnni",
  "avx512_bf16",
  "amx_tile",
  "amx_bf16",
  "amx_int8",
];

const LIB_DIRS = [
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib64",
  "/usr/lib",
  "/usr/local/lib",
];

export interface MachineInfo {
  cpu: string;
  cores: number;
  /** The relevant instruction-set flags this CPU reports (Linux /proc/cpuinfo; empty elsewhere). */
  flags: string[];
  openblas: {
    /** Our addon was built against OpenBLAS (its GEMMs use it). */
    addon: boolean;
    /** The OpenBLAS library installed on the system, or null. */
    system: string | null;
    /** What the system's libblas.so.3 resolves to (the BLAS that Debian's PyTorch and NumPy load), or null. */
    libblas: string | null;
    /** OPENBLAS_THREAD_TIMEOUT as set (log2 of the cycles its idle threads spin), or null: OpenBLAS's default, 28. */
    threadTimeout: string | null;
  };
  kernels: AddonInfo;
  /** 1-minute load average when asked: well above 0 means something else was running. */
  loadAverage: number;
}

function cpuFlags(): string[] {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((l) => l.startsWith("flags"));
    const flags = new Set((line?.split(":")[1] ?? "").trim().split(/\s+/));
    return RELEVANT_FLAGS.filter((f) => flags.has(f));
  } catch {
    return [];
  }
}

/** The real path of the first of `names` found in the usual library folders. */
function library(names: string[]): string | null {
  for (const dir of LIB_DIRS) {
    for (const name of names) {
      const file = `${dir}/${name}`;
      if (existsSync(file)) return realpathSync(file);
    }
  }
  return null;
}

export function machineInfo(): MachineInfo {
  const kernels = loadNative().info();
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    flags: cpuFlags(),
    openblas: {
      addon: kernels.blas === "openblas",
      system: library(["libopenblas.so.0", "libopenblas.so"]),
      libblas: library(["libblas.so.3"]),
      threadTimeout: readKernelsEnv().OPENBLAS_THREAD_TIMEOUT ?? null,
    },
    kernels,
    loadAverage: Number((loadavg()[0] ?? 0).toFixed(2)),
  };
}
