// Σ x² over a buffer (the global gradient norm), written once (device target
// sum_of_squares.cu, tests test/test_sum_of_squares.cpp). Like
// ../../src/cpu/optim.cc it accumulates in float64: each thread over a
// grid-stride loop, then a butterfly per warp, one double per warp in shared
// memory (sum_of_squares_shared_bytes), warp 0 sums those and thread 0 adds
// the block's total to *out with one atomic. *out must be zeroed first; the
// order of the per-block atomics is not fixed, so the last bits may differ
// between runs.
#pragma once

#include "../include/ot_cuda/ctx.h"
#include "elementwise_shape.cuh"

namespace ot_cuda::kernels {

OT_HD constexpr std::size_t sum_of_squares_shared_bytes(int threads) {
  return static_cast<std::size_t>((threads + kWarpSize - 1) / kWarpSize) * sizeof(double);
}
// At most 1024 blocks: each adds one atomic, and a few per SM saturate memory.
OT_HD constexpr unsigned sum_of_squares_blocks(std::int64_t count) { return elementwise_blocks(count, 1024); }

template <class Ctx>
OT_HD OT_FORCEINLINE double warp_sum_f64(Ctx& ctx, double v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  return v;
}

template <class Ctx>
OT_HD void sum_of_squares_f32(Ctx& ctx, const float* x, std::int64_t count, double* out) {
  double sum = 0.0;
  for (std::int64_t i = grid_index(ctx), s = grid_stride(ctx); i < count; i += s) {
    const double xi = x[i];
    sum = ::fma(xi, xi, sum);
  }
  sum = warp_sum_f64(ctx, sum);
  const auto scratch = shared_array<double>(ctx);
  if (ctx.lane() == 0) scratch[ctx.warp()] = sum;
  ctx.sync();
  if (ctx.warp() == 0) {
    const Dim3 d = ctx.block_dim();
    const unsigned warps = (d.x * d.y * d.z + kWarpSize - 1) / kWarpSize;
    const double total = warp_sum_f64(ctx, ctx.lane() < warps ? static_cast<double>(scratch[ctx.lane()]) : 0.0);
    if (ctx.lane() == 0) ctx.atomic_add(out, total);
  }
}

}  // namespace ot_cuda::kernels
