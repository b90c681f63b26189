// The device target of kernels/sum_of_squares.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 32
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx fma.rn.f64
// compile-gate: ptx atom.global.add.f64
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "sum_of_squares.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_sum_of_squares_f32_kernel, (k::kElementwiseThreads),
          (const float* __restrict__ x, std::int64_t count, double* __restrict__ out),
          k::sum_of_squares_f32(ctx, x, count, out))

// *out (device memory) = Σ x²: zeroed on `stream`, then accumulated.
extern "C" cudaError_t ot_cuda_sum_of_squares_f32(const float* x, std::int64_t count, double* out,
                                                  cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (const cudaError_t e = cudaMemsetAsync(out, 0, sizeof(double), stream); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_sum_of_squares_f32_kernel, k::sum_of_squares_blocks(count), k::kElementwiseThreads,
                   k::sum_of_squares_shared_bytes(k::kElementwiseThreads), stream, x, count, out);
}
