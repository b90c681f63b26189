// The device target of kernels/embedding.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 32
// compile-gate: max-static-smem 0
// compile-gate: ptx atom.global.add.f32
#include "../include/ot_cuda/launch.h"
#include "embedding.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_embedding_forward_f32_kernel, (256),
          (const std::int32_t* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out, int d),
          k::embedding_forward_f32(ctx, ids, table, out, d))

OT_KERNEL(ot_embedding_forward_bf16_kernel, (256),
          (const std::int32_t* __restrict__ ids, const std::uint16_t* __restrict__ table, float* __restrict__ out,
           int d),
          k::embedding_forward_bf16(ctx, ids, table, out, d))

OT_KERNEL(ot_embedding_backward_f32_kernel, (256),
          (const std::int32_t* __restrict__ ids, const float* __restrict__ d_out, float* __restrict__ d_table, int d),
          k::embedding_backward_f32(ctx, ids, d_out, d_table, d))

extern "C" cudaError_t ot_cuda_embedding_forward_f32(const std::int32_t* ids, const float* table, float* out, int n,
                                                     int d, cudaStream_t stream) {
  if (n < 0 || d <= 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return OT_LAUNCH(ot_embedding_forward_f32_kernel, n, k::embedding_block_threads(d), 0, stream, ids, table, out, d);
}

extern "C" cudaError_t ot_cuda_embedding_forward_bf16(const std::int32_t* ids, const std::uint16_t* table, float* out,
                                                      int n, int d, cudaStream_t stream) {
  if (n < 0 || d <= 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return OT_LAUNCH(ot_embedding_forward_bf16_kernel, n, k::embedding_block_threads(d), 0, stream, ids, table, out, d);
}

// d_table += scatter of d_out by ids (d_table is not zeroed here).
extern "C" cudaError_t ot_cuda_embedding_backward_f32(const std::int32_t* ids, const float* d_out, float* d_table,
                                                      int n, int d, cudaStream_t stream) {
  if (n < 0 || d <= 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return OT_LAUNCH(ot_embedding_backward_f32_kernel, n, k::embedding_block_threads(d), 0, stream, ids, d_out, d_table,
                   d);
}
