// The reference KL over rows of logits, written once (device target
// reference_kl.cu, tests test/test_reference_kl.cpp), as the CPU backend's
// referenceKlRows (../src/backend/cpu-loops.ts). For each row r of weight
// w = weights[r] ≠ 0, in f64 from the f32 inputs:
//
//   log p_j = logits[r, j] − lse[r],   log q_j = ref_logits[r, j] − ref_lse[r]
//   out[r]  = w · Σ_j q_j · (log q_j − log p_j)          (w · KL(q‖p))
//   d_logits[r, j] = f32(d_logits[r, j] + w · (p_j − q_j))   (the add in f64, rounded once, as the CPU's)
//
// A row with w == 0 leaves d_logits alone and gets out[r] = 0 (the CPU
// backend's out is a fresh zeroed Float64Array). One block per row (grid.x =
// rows), a whole number of warps (reference_kl_block_threads) striding over
// the vocabulary; the KL sum is reduced in f64 by a butterfly per warp, then
// thread 0 adds the warps' partials in order from one double per warp of
// shared memory (reference_kl_shared_bytes) — deterministic. reduce.h's
// block_sum is float-only, hence the f64 one here.
#pragma once

#include <cmath>
#include <cstdint>

#include "../include/ot_cuda/ctx.h"

namespace ot_cuda::kernels {

// ≥ 4 columns a thread, 1 to 8 warps (a row is two f64 exps per element).
OT_HD constexpr int reference_kl_block_threads(int vocab) {
  const int warps = (vocab + 4 * kWarpSize - 1) / (4 * kWarpSize);
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
OT_HD constexpr std::size_t reference_kl_shared_bytes(int threads) {
  return static_cast<std::size_t>(threads / kWarpSize) * sizeof(double);
}

template <class Ctx>
OT_HD OT_FORCEINLINE double kl_warp_sum(Ctx& ctx, double v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// The block's total on thread 0 (other threads get their warp's sum).
template <class Ctx>
OT_HD OT_FORCEINLINE double kl_block_sum(Ctx& ctx, double v) {
  const auto scratch = shared_array<double>(ctx);
  const unsigned warps = ctx.block_dim().x / kWarpSize;
  v = kl_warp_sum(ctx, v);
  if (ctx.lane() == 0) scratch[ctx.warp()] = v;
  ctx.sync();
  if (ctx.thread_idx().x == 0) {
    v = 0.0;
    for (unsigned w = 0; w < warps; ++w) v += static_cast<double>(scratch[w]);
  }
  return v;
}

template <class Ctx>
OT_HD void reference_kl_f32(Ctx& ctx, const float* logits, const float* lse, const float* ref_logits,
                            const float* ref_lse, const float* weights, int vocab, float* d_logits, double* out) {
  const std::size_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const double w = weights[row];
  // Uniform over the block: every thread leaves before the barrier, or none.
  if (w == 0.0) {
    if (tid == 0) out[row] = 0.0;
    return;
  }
  const std::size_t base = row * static_cast<std::size_t>(vocab);
  const float* x = logits + base;
  const float* y = ref_logits + base;
  float* dx = d_logits + base;
  const double shift = lse[row], ref_shift = ref_lse[row];

  double kl = 0.0;
#if defined(__CUDA_ARCH__)
#pragma unroll 2  // sm_90a's ptxas spills the f64 exps' cold path at unroll 1
#endif
  for (int j = tid; j < vocab; j += stride) {
    const double logp = static_cast<double>(x[j]) - shift;
    const double logq = static_cast<double>(y[j]) - ref_shift;
    const double q = ::exp(logq);
    kl += q * (logq - logp);
    dx[j] = static_cast<float>(static_cast<double>(dx[j]) + w * (::exp(logp) - q));
  }
  kl = kl_block_sum(ctx, kl);
  if (tid == 0) out[row] = w * kl;
}

}  // namespace ot_cuda::kernels
