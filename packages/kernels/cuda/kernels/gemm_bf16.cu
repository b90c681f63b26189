// The device target of kernels/gemm_bf16.cuh: the tensor-core GEMM that runs
// when cuBLASLt is absent (blaslt/ is the fast path when it loads).
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 128
// compile-gate: max-static-smem 0
// compile-gate: ptx mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "gemm_bf16.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

// 128 threads (gemm_bf16_block_threads): 32 f32 accumulators, 8 A and 8 B
// fragment registers per lane; the budget keeps 4 blocks per SM possible.
OT_KERNEL(ot_gemm_bf16_xwt_kernel, (128),
          (const std::uint16_t* __restrict__ x, const std::uint16_t* __restrict__ w, float* __restrict__ y, int m,
           int n, int k),
          ot_cuda::kernels::gemm_bf16_xwt(ctx, x, w, y, m, n, k))

// y[m, n] = x[m, k] * W[n, k]^T, bf16 in (uint16 bits), f32 out: the launch
// shape the CPU tests use. m, n, k >= 0; an empty product writes nothing
// (k == 0 with m, n > 0 writes zeros).
extern "C" cudaError_t ot_cuda_gemm_bf16_xwt(const std::uint16_t* x, const std::uint16_t* w, float* y, int m, int n,
                                             int k, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || n == 0) return cudaSuccess;
  const ot_cuda::Dim3 g = ot_cuda::kernels::gemm_bf16_grid(m, n);
  if (g.y > 65535) return cudaErrorInvalidValue;
  return OT_LAUNCH(ot_gemm_bf16_xwt_kernel, g, ot_cuda::kernels::gemm_bf16_block_threads(),
                   ot_cuda::kernels::gemm_bf16_shared_bytes(), stream, x, w, y, m, n, k);
}
