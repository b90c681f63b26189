// The device target of kernels/gemm_f32_backward.cuh: the f32 GEMM's backward
// products dx = dy W and dW = dy^T x on CUDA cores. The same tile machinery as
// gemm_f32.cu, staging transposed operands.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 64
// compile-gate: max-static-smem 0
// compile-gate: ptx fma.rn.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "gemm_f32_backward.cuh"
#include "launchers.h"  // the other launchers' declarations

// 256 threads (gemm_f32_block_threads), as gemm_f32.cu: 16 f32 accumulators
// and 8 staged operands per thread. The transposed staging keeps more
// addresses live (ptxas takes 64 registers unasked), so the launch bounds ask
// for 4 blocks per SM (<= 64 registers) outright; the gate checks that costs
// no spills.

OT_KERNEL(ot_gemm_f32_backward_input_kernel, (256, 4),
          (const float* __restrict__ dy, const float* __restrict__ w, float* __restrict__ dx, int m, int n, int k,
           int accumulate),
          ot_cuda::kernels::gemm_f32_backward_input(ctx, dy, w, dx, m, n, k, accumulate != 0))

OT_KERNEL(ot_gemm_f32_backward_weight_kernel, (256, 4),
          (const float* __restrict__ dy, const float* __restrict__ x, float* __restrict__ dw, int m, int n, int k,
           int accumulate),
          ot_cuda::kernels::gemm_f32_backward_weight(ctx, dy, x, dw, m, n, k, accumulate != 0))

// dx[m, k] (+)= dy[m, n] * W[n, k], f32 in and out (accumulate != 0 adds to
// dx). m, n, k >= 0; an empty dx launches nothing (n == 0 writes zeros, or
// leaves dx as it is when accumulating).
extern "C" cudaError_t ot_cuda_gemm_f32_backward_input(const float* dy, const float* w, float* dx, int m, int n, int k,
                                                       int accumulate, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || k == 0 || (n == 0 && accumulate != 0)) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_f32_backward_input_grid(m, k);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_f32_backward_input_kernel, g, ot_cuda::kernels::gemm_f32_block_threads(),
                   ot_cuda::kernels::gemm_f32_shared_bytes(), stream, dy, w, dx, m, n, k, accumulate);
}

// dW[n, k] (+)= dy[m, n]^T * x[m, k], f32 in and out (accumulate != 0 adds to
// dW, as gradient accumulation does). m, n, k >= 0; an empty dW launches
// nothing (m == 0 writes zeros, or leaves dW as it is when accumulating).
extern "C" cudaError_t ot_cuda_gemm_f32_backward_weight(const float* dy, const float* x, float* dw, int m, int n, int k,
                                                        int accumulate, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (n == 0 || k == 0 || (m == 0 && accumulate != 0)) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_f32_backward_weight_grid(n, k);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_f32_backward_weight_kernel, g, ot_cuda::kernels::gemm_f32_block_threads(),
                   ot_cuda::kernels::gemm_f32_shared_bytes(), stream, dy, x, dw, m, n, k, accumulate);
}
