// The device target of kernels/gemm_bf16.cuh's backward products: the
// tensor-core dx = dy W and dW += dy^T x that run when cuBLASLt is absent.
// The same tile machinery as gemm_bf16.cu, staging transposed operands.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 128
// compile-gate: max-static-smem 0
// compile-gate: ptx mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "gemm_bf16.cuh"
#include "launchers.h"  // the launchers' declarations, checked against their definitions here

// 128 threads (gemm_bf16_block_threads), as gemm_bf16.cu; the transposed
// staging keeps more addresses live, so the launch bounds ask for 4 blocks per
// SM (<= 128 registers) outright; the gate checks that costs no spills.

OT_KERNEL(ot_gemm_bf16_backward_input_kernel, (128, 4),
          (const std::uint16_t* __restrict__ dy, const std::uint16_t* __restrict__ w, float* __restrict__ dx, int m,
           int n, int k),
          ot_cuda::kernels::gemm_bf16_backward_input(ctx, dy, w, dx, m, n, k))

OT_KERNEL(ot_gemm_bf16_backward_weight_kernel, (128, 4),
          (const std::uint16_t* __restrict__ dy, const std::uint16_t* __restrict__ x, float* __restrict__ dw, int m,
           int n, int k),
          ot_cuda::kernels::gemm_bf16_backward_weight(ctx, dy, x, dw, m, n, k))

// dx[m, k] = dy[m, n] * W[n, k], bf16 in (uint16 bits), f32 out. m, n, k >= 0;
// an empty dx writes nothing (n == 0 with m, k > 0 writes zeros).
extern "C" cudaError_t ot_cuda_gemm_bf16_backward_input(const std::uint16_t* dy, const std::uint16_t* w, float* dx,
                                                        int m, int n, int k, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || k == 0) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_bf16_grid(m, k);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_bf16_backward_input_kernel, g, ot_cuda::kernels::gemm_bf16_block_threads(),
                   ot_cuda::kernels::gemm_bf16_shared_bytes(), stream, dy, w, dx, m, n, k);
}

// dW[n, k] += dy[m, n]^T * x[m, k], bf16 in (uint16 bits), accumulated into f32
// dW. m, n, k >= 0; m == 0 (nothing to add) or an empty dW launches nothing.
extern "C" cudaError_t ot_cuda_gemm_bf16_backward_weight(const std::uint16_t* dy, const std::uint16_t* x, float* dw,
                                                         int m, int n, int k, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || n == 0 || k == 0) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_bf16_grid(n, k);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_bf16_backward_weight_kernel, g, ot_cuda::kernels::gemm_bf16_block_threads(),
                   ot_cuda::kernels::gemm_bf16_shared_bytes(), stream, dy, x, dw, m, n, k);
}
