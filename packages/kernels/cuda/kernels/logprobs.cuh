// Token log-probabilities over rows of logits (log-softmax with a target
// gather) and the backward, written once: nvcc compiles them in logprobs.cu,
// the tests run them in the CPU execution (test/test_logprobs.cpp) against the
// CPU backend (../../src/cpu/softmax.cc: ot::log_softmax_gather).
//
//   lse_i      = m_i + log Σ_j exp(logits[i, j] − m_i),  m_i = max_j logits[i, j]
//   logprobs_i = logits[i, t_i] − lse_i
//   dLogits[i, j] = dLogprobs_i · (1[j = t_i] − exp(logits[i, j] − lse_i))
//
// Two passes per row (max, then Σ exp with each exp in f32, as the CPU
// backend's AVX2 path, and the sum in f64), one block per row (grid.x = rows),
// a whole number of warps (logprobs_block_threads). A row whose max is ±inf
// gets lse = that max, as the CPU backend's. The backward is one block per row
// too, with no reduction (lse comes from the forward). Targets are assumed in
// [0, vocab) (the binding checks them).
#pragma once

#include <cmath>
#include <cstdint>

#include "../include/ot_cuda/ctx.h"

namespace ot_cuda::kernels {

OT_HD constexpr int logprobs_block_threads(int vocab) {
  const int warps = (vocab + 4 * kWarpSize - 1) / (4 * kWarpSize);  // ≥ 4 columns a thread
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
// One double per warp for the max, then one per warp for the sum (two
// regions: no barrier is needed between the two reductions).
OT_HD constexpr std::size_t logprobs_shared_bytes(int threads) {
  return 2 * static_cast<std::size_t>(threads / kWarpSize) * sizeof(double);
}

template <class Ctx>
OT_HD OT_FORCEINLINE double logprobs_warp_sum(Ctx& ctx, double v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  return v;
}

template <class Ctx>
OT_HD OT_FORCEINLINE float logprobs_warp_max(Ctx& ctx, float v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = ::fmaxf(v, ctx.shfl_xor_sync(kFullMask, v, offset));
  return v;
}

template <class Ctx>
OT_HD void log_softmax_gather_f32(Ctx& ctx, const float* logits, const std::int32_t* targets, float* logprobs,
                                  float* lse, int vocab) {
  const std::size_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const unsigned warps = static_cast<unsigned>(stride) / kWarpSize;
  const float* x = logits + row * static_cast<std::size_t>(vocab);
  const auto scratch = shared_array<double>(ctx);

  // fmaxf skips NaN, as the CPU backend's std::max(m, x) does.
  float m = -INFINITY;
  for (int j = tid; j < vocab; j += stride) m = ::fmaxf(m, x[j]);
  m = logprobs_warp_max(ctx, m);
  if (ctx.lane() == 0) scratch[ctx.warp()] = m;
  ctx.sync();
  m = -INFINITY;
  for (unsigned w = 0; w < warps; ++w) m = ::fmaxf(m, static_cast<float>(scratch[w]));

  double sum = 0.0;
  if (m != INFINITY && m != -INFINITY) {  // uniform: every thread has the same m
    for (int j = tid; j < vocab; j += stride) sum += static_cast<double>(::expf(x[j] - m));
  }
  sum = logprobs_warp_sum(ctx, sum);
  if (ctx.lane() == 0) scratch[warps + ctx.warp()] = sum;
  ctx.sync();
  if (tid == 0) {
    double total = 0.0;
    for (unsigned w = 0; w < warps; ++w) total += scratch[warps + w];
    const float l = (m == INFINITY || m == -INFINITY) ? m : m + static_cast<float>(::log(total));
    lse[row] = l;
    logprobs[row] = x[targets[row]] - l;
  }
}

template <class Ctx>
OT_HD void log_softmax_gather_backward_f32(Ctx& ctx, const float* logits, const std::int32_t* targets,
                                           const float* lse, const float* d_logprobs, float* d_logits, int vocab) {
  const std::size_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const float* x = logits + row * static_cast<std::size_t>(vocab);
  float* dx = d_logits + row * static_cast<std::size_t>(vocab);
  const float l = lse[row], g = d_logprobs[row];
  const int t = targets[row];
  for (int j = tid; j < vocab; j += stride) {
    const float d = -g * ::expf(x[j] - l);
    dx[j] = j == t ? d + g : d;
  }
}

}  // namespace ot_cuda::kernels
