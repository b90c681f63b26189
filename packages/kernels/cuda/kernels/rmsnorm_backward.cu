// The device target of kernels/rmsnorm_backward.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx atom.global.add.f32
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "rmsnorm_backward.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_rmsnorm_backward_f32_kernel, (256),
          (const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ inv_rms, float eps,
           const float* __restrict__ d_out, float* __restrict__ dx, bool accumulate, float* __restrict__ dw, int cols),
          k::rmsnorm_backward_f32(ctx, x, w, inv_rms, eps, d_out, dx, accumulate, dw, cols))

// inv_rms and dw may be null (r recomputed; dw skipped); dw is added into.
extern "C" cudaError_t ot_cuda_rmsnorm_backward_f32(const float* x, const float* w, const float* inv_rms, float eps,
                                                    const float* d_out, float* dx, int accumulate, float* dw, int rows,
                                                    int cols, cudaStream_t stream) {
  if (rows < 0 || cols <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const int threads = k::rmsnorm_backward_block_threads(cols);
  return OT_LAUNCH(ot_rmsnorm_backward_f32_kernel, rows, threads, k::rmsnorm_backward_shared_bytes(threads), stream, x,
                   w, inv_rms, eps, d_out, dx, accumulate != 0, dw, cols);
}
