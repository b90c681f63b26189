// The device target of kernels/rmsnorm.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 32
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "rmsnorm.cuh"

// 256 threads at most (rmsnorm_block_threads), so ptxas may use up to 255
// registers; the budget above keeps it far lower, for occupancy.
OT_KERNEL(ot_rmsnorm_f32_kernel, (256),
          (const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, float* __restrict__ inv_rms,
           int cols, float eps),
          ot_cuda::kernels::rmsnorm_f32(ctx, x, w, y, inv_rms, cols, eps))

// The launch the CUDA addon will call: the same block shape the CPU tests use.
extern "C" cudaError_t ot_cuda_rmsnorm_f32(const float* x, const float* w, float* y, float* inv_rms, int rows, int cols,
                                           float eps, cudaStream_t stream) {
  if (rows < 0 || cols <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const int threads = ot_cuda::kernels::rmsnorm_block_threads(cols);
  return OT_LAUNCH(ot_rmsnorm_f32_kernel, rows, threads, ot_cuda::kernels::rmsnorm_shared_bytes(threads), stream, x, w,
                   y, inv_rms, cols, eps);
}
