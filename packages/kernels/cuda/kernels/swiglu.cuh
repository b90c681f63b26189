// SwiGLU, written once (device target swiglu.cu, tests test/test_swiglu.cpp),
// the formulas of ../../src/cpu/activation.cc:
//
//   out    = g · σ(g) · up,                 σ(g) = 1 / (1 + exp(−g))
//   d_up   = d_out · g · σ(g)
//   d_gate = d_out · up · σ(g) · (1 + g · (1 − σ(g)))
//
// Elementwise over `count`, grid-stride (elementwise_shape.cuh); no shared memory.
#pragma once

#include "elementwise_shape.cuh"

namespace ot_cuda::kernels {

OT_HD OT_FORCEINLINE float sigmoid(float g) {
#if defined(__CUDA_ARCH__)
  return 1.0f / (1.0f + ::expf(-g));
#else
  return 1.0f / (1.0f + std::exp(-g));
#endif
}

template <class Ctx>
OT_HD void swiglu_forward_f32(Ctx& ctx, const float* gate, const float* up, float* out, std::int64_t count) {
  for (std::int64_t i = grid_index(ctx), s = grid_stride(ctx); i < count; i += s) {
    const float g = gate[i];
    out[i] = g * sigmoid(g) * up[i];
  }
}

template <class Ctx>
OT_HD void swiglu_backward_f32(Ctx& ctx, const float* d_out, const float* gate, const float* up, float* d_gate,
                               float* d_up, std::int64_t count) {
  for (std::int64_t i = grid_index(ctx), s = grid_stride(ctx); i < count; i += s) {
    const float g = gate[i], dy = d_out[i];
    const float sg = sigmoid(g);
    d_up[i] = dy * g * sg;
    d_gate[i] = dy * up[i] * sg * (1.0f + g * (1.0f - sg));
  }
}

}  // namespace ot_cuda::kernels
