// The device target of kernels/gemm_f32.cuh: the f32 GEMM on CUDA cores.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 64
// compile-gate: max-static-smem 0
// compile-gate: ptx fma.rn.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "gemm_f32.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

// 256 threads (gemm_f32_block_threads): 16 f32 accumulators and 8 staged
// operands per thread.
OT_KERNEL(ot_gemm_f32_xwt_kernel, (256),
          (const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int m, int n, int k,
           int accumulate),
          ot_cuda::kernels::gemm_f32_xwt(ctx, x, w, y, m, n, k, accumulate != 0))

// y[m, n] (+)= x[m, k] * W[n, k]^T, f32 in and out (accumulate != 0 adds to y).
// m, n, k >= 0; an empty y launches nothing (k == 0 writes zeros, or leaves y
// as it is when accumulating).
extern "C" cudaError_t ot_cuda_gemm_f32_xwt(const float* x, const float* w, float* y, int m, int n, int k,
                                            int accumulate, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || n == 0 || (k == 0 && accumulate != 0)) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_f32_grid(m, n);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_f32_xwt_kernel, g, ot_cuda::kernels::gemm_f32_block_threads(),
                   ot_cuda::kernels::gemm_f32_shared_bytes(), stream, x, w, y, m, n, k, accumulate);
}
