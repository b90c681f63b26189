// The device target of kernels/adamw.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx sqrt.rn.f32
// compile-gate: ptx div.rn.f32
#include "../include/ot_cuda/launch.h"
#include "adamw.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_adamw_step_f32_kernel, (k::kElementwiseThreads),
          (float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ v,
           std::int64_t count, k::AdamWScalars h),
          k::adamw_step_f32(ctx, param, grad, m, v, count, h))

// One step in place on param, m and v; `step` is 1-based (after this update).
extern "C" cudaError_t ot_cuda_adamw_step_f32(float* param, const float* grad, float* m, float* v, std::int64_t count,
                                              double lr, double beta1, double beta2, double eps, double weight_decay,
                                              std::int64_t step, double grad_scale, cudaStream_t stream) {
  if (count < 0 || step < 1) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const k::AdamWScalars h = k::adamw_scalars(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  return OT_LAUNCH(ot_adamw_step_f32_kernel, k::elementwise_blocks(count), k::kElementwiseThreads, 0, stream, param,
                   grad, m, v, count, h);
}
