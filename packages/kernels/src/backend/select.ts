// Picking a backend by name (WORKER_DEVICE, issue 45). "auto" takes the best
// backend that loads and says in one line why it fell back; "cpu" is the CPU;
// "cuda:N" is refused until the CUDA backend lands ("GPU workers"), saying so,
// and saying first why device N is not usable when the CUDA addon's probe finds
// none (no addon built, no driver, no such device).
import { type CudaAddonLoad, describeCudaDevice, loadCudaAddon } from "../cuda-addon.ts";
import type { Backend } from "./backend.ts";
import { CpuBackend } from "./cpu.ts";

export type DeviceChoice = "auto" | "cpu" | `cuda:${number}`;

const CHOICE = /^(auto|cpu|cuda:(0|[1-9][0-9]{0,2}))$/;

/** The device a worker was told to use, checked; the error names the value and what is accepted. */
export function parseDeviceChoice(value: string, source = "WORKER_DEVICE"): DeviceChoice {
  if (!CHOICE.test(value)) {
    throw new RangeError(`${source}=${JSON.stringify(value)}: expected auto, cpu or cuda:N (N a GPU index)`);
  }
  return value as DeviceChoice;
}

export interface SelectedBackend {
  backend: Backend;
  /** One line saying why "auto" did not take a faster device, else null. */
  fallback: string | null;
}

const NO_CUDA_BACKEND = "this build has no CUDA backend yet (it arrives with GPU workers)";

/** Why "auto" did not take a GPU, in one line ("device auto: …; using the CPU"). */
function autoFallback(cuda: CudaAddonLoad): string {
  if (!cuda.ok) return `device auto: no usable CUDA device (${cuda.reason}); using the CPU`;
  const first = cuda.probe.devices[0];
  const found = first ? `cuda:0 is ${describeCudaDevice(first)}` : "a CUDA device was found";
  const more = cuda.probe.devices.length > 1 ? ` and ${cuda.probe.devices.length - 1} more` : "";
  return `device auto: ${found}${more}, but ${NO_CUDA_BACKEND}; using the CPU`;
}

/** Why "cuda:N" is refused, in one line. */
function cudaRefusal(choice: `cuda:${number}`, cuda: CudaAddonLoad): string {
  const index = Number(choice.slice("cuda:".length));
  const head = `WORKER_DEVICE=${choice}`;
  if (!cuda.ok) return `${head}: no usable CUDA device ${index} (${cuda.reason}); use auto or cpu`;
  const devices = cuda.probe.devices;
  if (index >= devices.length) {
    const have = devices.map((d) => `cuda:${d.index}`).join(", ");
    return `${head}: no CUDA device ${index} here (this machine has ${devices.length}: ${have}); use auto or cpu`;
  }
  return `${head}: ${NO_CUDA_BACKEND}; use auto or cpu`;
}

/**
 * Opens the chosen backend. There is no CUDA backend in this build yet, so
 * "auto" opens the CPU and says why (with the CUDA addon's probe: no addon, no
 * driver, no device, or a device waiting for the CUDA backend), and "cuda:N" is
 * refused with a message that says so (a worker must not quietly run a GPU's
 * work on its CPU). `cuda` is what the CUDA addon's probe found (default: this
 * process's; tests pass their own).
 */
export function selectBackend(choice: DeviceChoice, cuda?: CudaAddonLoad): SelectedBackend {
  if (choice === "cpu") return { backend: new CpuBackend(), fallback: null };
  cuda ??= loadCudaAddon();
  if (choice === "auto") return { backend: new CpuBackend(), fallback: autoFallback(cuda) };
  throw new Error(cudaRefusal(choice, cuda));
}
