// Setup of the "cuda-emulated" test project (vitest.config.ts): the engine's
// sampler and trainer suites run again with every model on the CUDA backend
// over the emulated device, the same kernels a GPU runs executed on the CPU
// (issue 47). Where the emulated device was not built (no cmake or
// Boost.Context at install), the project fails saying how to build it.
import { CudaBackend, openEmulatedDevice } from "@opentinker/kernels/testing";
import { setDefaultBackend } from "../base-model.ts";

setDefaultBackend(new CudaBackend(openEmulatedDevice(), "cuda-emulated"));
