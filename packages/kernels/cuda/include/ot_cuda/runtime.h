// The CUDA runtime's types a launcher speaks (cudaError_t, cudaStream_t and the
// few calls launchers make). The real runtime header everywhere but the
// emulated device build (OT_CUDA_EMU: g++, no CUDA toolkit needed), where a
// launcher runs its kernel in the CPU execution and these are the emulator's.
#pragma once

#if defined(OT_CUDA_EMU)

#include <cstddef>

// The runtime's values for the codes a launcher returns (driver_types.h), so
// an error means the same number in both builds.
enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorLaunchFailure = 719,
};
using cudaStream_t = struct CUstream_st*;

// The emulated device runs every launch to completion before returning, so a
// launch has no error left to report afterwards.
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t stream);

#else
#include <cuda_runtime_api.h>
#endif
