// AdamW over f32 masters, written once (device target adamw.cu, tests
// test/test_adamw.cpp), the formula and order of ../../src/cpu/optim.cc:
//
//   g  = grad_scale · grad
//   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
//   p ← p·(1 − lr·wd) − (lr / (1 − β1^t)) · m / (√v · (1 / √(1 − β2^t)) + eps)
//
// The step's scalars are computed once on the host in float64 and rounded to
// float exactly as the CPU kernel does (adamw_scalars). Elementwise,
// grid-stride (elementwise_shape.cuh); no shared memory.
#pragma once

#include <cmath>

#include "elementwise_shape.cuh"

namespace ot_cuda::kernels {

struct AdamWScalars {
  float decay, step_size, inv_sqrt_bias2, b1, b2, c1, c2, scale, eps;
};

// Host side: `step` is 1-based (after this update), as in ot::AdamWParams.
inline AdamWScalars adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                                  std::int64_t step, double grad_scale) {
  const double bias1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  return AdamWScalars{static_cast<float>(1.0 - lr * weight_decay), static_cast<float>(lr / bias1),
                      static_cast<float>(1.0 / std::sqrt(bias2)),  static_cast<float>(beta1),
                      static_cast<float>(beta2),                   static_cast<float>(1.0 - beta1),
                      static_cast<float>(1.0 - beta2),             static_cast<float>(grad_scale),
                      static_cast<float>(eps)};
}

template <class Ctx>
OT_HD void adamw_step_f32(Ctx& ctx, float* param, const float* grad, float* m, float* v, std::int64_t count,
                          AdamWScalars h) {
  for (std::int64_t i = grid_index(ctx), s = grid_stride(ctx); i < count; i += s) {
    const float g = h.scale * grad[i];
    const float mi = h.b1 * m[i] + h.c1 * g;
    const float vi = h.b2 * v[i] + h.c2 * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * h.decay - h.step_size * (mi / (std::sqrt(vi) * h.inv_sqrt_bias2 + h.eps));
  }
}

}  // namespace ot_cuda::kernels
