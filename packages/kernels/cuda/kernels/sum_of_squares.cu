// The device target of kernels/sum_of_squares.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 32
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx fma.rn.f64
// compile-gate: ptx atom.global.add.f64
#include <cuda_runtime.h>

#include "sum_of_squares.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

namespace k = ot_cuda::kernels;

__global__ void __launch_bounds__(k::kElementwiseThreads)
    ot_sum_of_squares_f32_kernel(const float* __restrict__ x, std::int64_t count, double* __restrict__ out) {
  ot_cuda::DeviceCtx ctx;
  k::sum_of_squares_f32(ctx, x, count, out);
}

// *out (device memory) = Σ x²: zeroed on `stream`, then accumulated.
extern "C" cudaError_t ot_cuda_sum_of_squares_f32(const float* x, std::int64_t count, double* out,
                                                  cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (const cudaError_t e = cudaMemsetAsync(out, 0, sizeof(double), stream); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  ot_sum_of_squares_f32_kernel<<<k::sum_of_squares_blocks(count), k::kElementwiseThreads,
                                 k::sum_of_squares_shared_bytes(k::kElementwiseThreads), stream>>>(x, count, out);
  return cudaGetLastError();
}
