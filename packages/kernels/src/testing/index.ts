// The kernels' testing entry: the strict test backend, which the engine's tests
// run on to prove the seam is complete (issue 45), and the CUDA backend on the
// emulated device (issue 47). Not part of what ships.

export { CudaBackend } from "../backend/cuda/cuda.ts";
export { CUDA_EMU_ADDON_FILE, openEmulatedDevice } from "../backend/cuda/device.ts";
export { HostAccessError, StrictBackend, type Transfer } from "../backend/strict.ts";
