// Picking a backend by name (WORKER_DEVICE, issues 45 and 47). "auto" takes the
// best backend that loads and says in one line why it fell back; "cpu" is the
// CPU; "cuda:N" is GPU N on the CUDA backend, refused in one line saying why
// device N is not usable when the CUDA addon's probe finds none (no addon
// built, no driver, no such device). "cuda-emulated" is the CUDA backend on the
// kernels' CPU execution: for tests, never what auto picks.
import { type CudaAddon, type CudaAddonLoad, describeCudaDevice, loadCudaAddon } from "../cuda-addon.ts";
import type { Backend } from "./backend.ts";
import { CpuBackend } from "./cpu.ts";
import { CudaBackend } from "./cuda/cuda.ts";
import { openEmulatedDevice } from "./cuda/device.ts";

export type DeviceChoice = "auto" | "cpu" | `cuda:${number}` | "cuda-emulated";

const CHOICE = /^(auto|cpu|cuda:(0|[1-9][0-9]{0,2})|cuda-emulated)$/;

/** The device a worker was told to use, checked; the error names the value and what is accepted. */
export function parseDeviceChoice(value: string, source = "WORKER_DEVICE"): DeviceChoice {
  if (!CHOICE.test(value)) {
    throw new RangeError(
      `${source}=${JSON.stringify(value)}: expected auto, cpu or cuda:N (N a GPU index; cuda-emulated in tests)`,
    );
  }
  return value as DeviceChoice;
}

export interface SelectedBackend {
  backend: Backend;
  /** One line saying why "auto" did not take a faster device, else null. */
  fallback: string | null;
}

/** Why "auto" stays on the CPU, in one line ("device auto: …; using the CPU"). */
function autoFallback(cuda: CudaAddonLoad): string {
  if (!cuda.ok) return `device auto: no usable CUDA device (${cuda.reason}); using the CPU`;
  const first = cuda.probe.devices[0];
  const found = first ? `cuda:0 is ${describeCudaDevice(first)}` : "a CUDA device was found";
  const more = cuda.probe.devices.length > 1 ? ` and ${cuda.probe.devices.length - 1} more` : "";
  return `device auto: ${found}${more}, but auto takes the CUDA backend only once it is verified on a GPU (set WORKER_DEVICE=cuda:0 to use it); using the CPU`;
}

/** GPU N on the CUDA backend, or an error saying in one line why not. */
function openCuda(choice: `cuda:${number}`, cuda: CudaAddonLoad): CudaBackend {
  const index = Number(choice.slice("cuda:".length));
  const head = `WORKER_DEVICE=${choice}`;
  if (!cuda.ok) throw new Error(`${head}: no usable CUDA device ${index} (${cuda.reason}); use auto or cpu`);
  const devices = cuda.probe.devices;
  if (index >= devices.length) {
    const have = devices.map((d) => `cuda:${d.index}`).join(", ");
    throw new Error(
      `${head}: no CUDA device ${index} here (this machine has ${devices.length}: ${have}); use auto or cpu`,
    );
  }
  return new CudaBackend((cuda.addon as CudaAddon).openDevice(index));
}

/**
 * Opens the chosen backend. "cuda:N" opens GPU N, or is refused with the
 * reason (a worker must not quietly run a GPU's work on its CPU); "auto" opens
 * the CPU and says why (no addon, no driver, no device, or a device auto does
 * not take yet); "cuda-emulated" is the CUDA backend on the emulated device.
 * `cuda` is what the CUDA addon's probe found (default: this process's; tests
 * pass their own).
 */
export function selectBackend(choice: DeviceChoice, cuda?: CudaAddonLoad): SelectedBackend {
  if (choice === "cpu") return { backend: new CpuBackend(), fallback: null };
  if (choice === "cuda-emulated") {
    return { backend: new CudaBackend(openEmulatedDevice(), "cuda-emulated"), fallback: null };
  }
  cuda ??= loadCudaAddon();
  if (choice === "auto") return { backend: new CpuBackend(), fallback: autoFallback(cuda) };
  return { backend: openCuda(choice, cuda), fallback: null };
}
