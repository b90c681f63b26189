// The optional CUDA addon (build-cuda/opentinker_kernels_cuda.node, built by
// scripts/build-cuda.mjs when nvcc is found at install). Today it answers one
// question, probe(): which CUDA devices this process can use, or in one line
// why none. Its kernels get bindings with the CUDA backend ("GPU workers").
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { CudaDeviceHandle } from "./backend/cuda/device.ts";
import { readKernelsEnv } from "./env.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

/** Where `npm ci` (scripts/build-cuda.mjs) puts the addon. */
export const CUDA_ADDON_FILE = path.join(PACKAGE_DIR, "build-cuda", "opentinker_kernels_cuda.node");
/** The one-line reason scripts/build-cuda.mjs leaves when the addon failed to build. */
const BUILD_FAILED_NOTE = path.join(PACKAGE_DIR, "build-cuda", "build-failed.txt");

export interface CudaDevice {
  index: number;
  name: string;
  totalBytes: number;
  /** "major.minor", e.g. "9.0" for an H100. */
  computeCapability: string;
}

/** What the CUDA runtime says about this machine (never throws for a CUDA error). */
export interface CudaProbe {
  /** At least one device was found and described. */
  ok: boolean;
  /** The cudaError_t that stopped it (0 when ok): 35 without a driver, 100 without a device. */
  code: number;
  /** "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for …", or null when ok. */
  error: string | null;
  /** e.g. 13000 for CUDA 13.0. */
  runtimeVersion: number;
  /** The driver's CUDA version; 0 when no driver is installed. */
  driverVersion: number;
  devices: CudaDevice[];
}

export interface CudaAddon {
  probe(): CudaProbe;
  /** The kernel launchers this build carries (e.g. "rmsnorm_f32"), which a device's launch() takes. */
  launchers: string[];
  /** GPU `index` as a device (backend/cuda/device.ts); throws one line when it cannot be opened. */
  openDevice(index: number): CudaDeviceHandle;
}

/** The addon and its probe when there is a usable device, else one line saying why not. */
export type CudaAddonLoad =
  | { ok: true; addon: CudaAddon; probe: CudaProbe; file: string }
  | { ok: false; reason: string; addon: CudaAddon | null; probe: CudaProbe | null; file: string | null };

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** The probe's failure as one line: "CUDA: cudaErrorInsufficientDriver (35): …". */
export function probeReason(probe: CudaProbe): string {
  return oneLine(`CUDA: ${probe.error ?? `error ${probe.code}`}`);
}

function absentReason(file: string, chosen: boolean): string {
  if (chosen) return `the CUDA addon ${file} does not exist`;
  if (existsSync(BUILD_FAILED_NOTE)) {
    const note = oneLine(readFileSync(BUILD_FAILED_NOTE, "utf8"));
    return `this build has no CUDA addon (it failed to build at install: ${note})`;
  }
  return "this build has no CUDA addon (nvcc was not found at install)";
}

/** Loads and probes the addon at `file`; never throws. */
export function loadCudaAddonFrom(file: string, chosen = false): CudaAddonLoad {
  if (!existsSync(file)) {
    return { ok: false, reason: absentReason(file, chosen), addon: null, probe: null, file: null };
  }
  let addon: CudaAddon;
  try {
    addon = require(file) as CudaAddon;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      reason: oneLine(`the CUDA addon ${file} does not load: ${message}`),
      addon: null,
      probe: null,
      file,
    };
  }
  let probe: CudaProbe;
  try {
    probe = addon.probe();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: oneLine(`CUDA probe failed: ${message}`), addon, probe: null, file };
  }
  if (!probe.ok || probe.devices.length === 0) {
    return { ok: false, reason: probeReason(probe), addon, probe, file };
  }
  return { ok: true, addon, probe, file };
}

let loaded: CudaAddonLoad | undefined;

/**
 * The CUDA addon, probed once per process: the addon and its devices, or one
 * line saying why there is none to use (not built, does not load, no driver, no
 * device). OPENTINKER_KERNELS_CUDA_ADDON names another file, or "none".
 */
export function loadCudaAddon(): CudaAddonLoad {
  if (loaded) return loaded;
  const chosen = readKernelsEnv().OPENTINKER_KERNELS_CUDA_ADDON;
  if (chosen === "none") {
    loaded = {
      ok: false,
      reason: "the CUDA addon is turned off (OPENTINKER_KERNELS_CUDA_ADDON=none)",
      addon: null,
      probe: null,
      file: null,
    };
  } else if (chosen) {
    loaded = loadCudaAddonFrom(path.resolve(PACKAGE_DIR, chosen), true);
  } else {
    loaded = loadCudaAddonFrom(CUDA_ADDON_FILE);
  }
  return loaded;
}

/** "NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB)" */
export function describeCudaDevice(device: CudaDevice): string {
  const gib = (device.totalBytes / 2 ** 30).toFixed(1);
  return `${device.name} (sm_${device.computeCapability.replace(".", "")}, ${gib} GiB)`;
}
