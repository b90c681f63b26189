// RMSNorm over rows, written once: nvcc compiles it in rmsnorm.cu, the tests
// run it in the CPU execution (test/test_rmsnorm.cpp).
//
//   y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * w[c]
//   inv_rms[r] = 1 / sqrt(mean_c(x[r, :]^2) + eps)   (when inv_rms is not null: the backward's input)
//
// One block per row (grid.x = rows); the block is a whole number of warps
// (rmsnorm_block_threads) and has one float of dynamic shared memory per warp
// (rmsnorm_shared_bytes) for the cross-warp step of the reduction.
#pragma once

#include "../include/ot_cuda/reduce.h"

namespace ot_cuda::kernels {

// Enough threads that each strides over a handful of columns, at most 256:
// a row is memory-bound, and more threads than that only lengthen the
// reduction.
OT_HD constexpr int rmsnorm_block_threads(int cols) {
  const int warps = (cols + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
OT_HD constexpr std::size_t rmsnorm_shared_bytes(int threads) {
  return static_cast<std::size_t>(threads / kWarpSize) * sizeof(float);
}

template <class Ctx>
OT_HD void rmsnorm_f32(Ctx& ctx, const float* x, const float* w, float* y, float* inv_rms, int cols, float eps) {
  const std::size_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const float* xr = x + row * static_cast<std::size_t>(cols);
  float* yr = y + row * static_cast<std::size_t>(cols);

  // Coalesced: consecutive threads read consecutive columns.
  float sum_sq = 0.0f;
  for (int c = tid; c < cols; c += stride) sum_sq = ot_cuda::fma(xr[c], xr[c], sum_sq);
  const float total = block_sum(ctx, sum_sq, shared_array<float>(ctx));

  const float inv = ot_cuda::rsqrt(total / static_cast<float>(cols) + eps);
  for (int c = tid; c < cols; c += stride) yr[c] = xr[c] * inv * w[c];
  if (inv_rms != nullptr && tid == 0) inv_rms[row] = inv;
}

}  // namespace ot_cuda::kernels
