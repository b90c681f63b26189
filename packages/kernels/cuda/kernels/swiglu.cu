// The device target of kernels/swiglu.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx ex2.approx
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "swiglu.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_swiglu_forward_f32_kernel, (k::kElementwiseThreads),
          (const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out, std::int64_t count),
          k::swiglu_forward_f32(ctx, gate, up, out, count))

OT_KERNEL(ot_swiglu_backward_f32_kernel, (k::kElementwiseThreads),
          (const float* __restrict__ d_out, const float* __restrict__ gate, const float* __restrict__ up,
           float* __restrict__ d_gate, float* __restrict__ d_up, std::int64_t count),
          k::swiglu_backward_f32(ctx, d_out, gate, up, d_gate, d_up, count))

extern "C" cudaError_t ot_cuda_swiglu_forward_f32(const float* gate, const float* up, float* out, std::int64_t count,
                                                  cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_swiglu_forward_f32_kernel, k::elementwise_blocks(count), k::kElementwiseThreads, 0, stream, gate,
                   up, out, count);
}

extern "C" cudaError_t ot_cuda_swiglu_backward_f32(const float* d_out, const float* gate, const float* up,
                                                   float* d_gate, float* d_up, std::int64_t count,
                                                   cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_swiglu_backward_f32_kernel, k::elementwise_blocks(count), k::kElementwiseThreads, 0, stream,
                   d_out, gate, up, d_gate, d_up, count);
}
