// Picking a backend by name (WORKER_DEVICE, issue 45). "auto" takes the best
// backend that loads and says in one line why it fell back; "cpu" is the CPU;
// "cuda:N" is refused until the CUDA backend lands ("GPU workers"), saying so.
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

/**
 * Opens the chosen backend. There is no CUDA backend in this build yet, so
 * "auto" opens the CPU and says why, and "cuda:N" is refused with a message
 * that says so (a worker must not quietly run a GPU's work on its CPU).
 */
export function selectBackend(choice: DeviceChoice): SelectedBackend {
  if (choice === "cpu") return { backend: new CpuBackend(), fallback: null };
  if (choice === "auto") {
    return {
      backend: new CpuBackend(),
      fallback:
        "device auto: this build has no CUDA backend yet (it arrives with GPU workers); using the CPU",
    };
  }
  throw new Error(
    `WORKER_DEVICE=${choice}: this build has no CUDA backend yet (it arrives with GPU workers); use auto or cpu`,
  );
}
