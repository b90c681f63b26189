// The launch shape the elementwise ops (swiglu, adamw, sum_of_squares) share:
// 256-thread blocks over a grid-stride loop, so any count fits a bounded grid.
// The device launchers and the tests both take it from here.
#pragma once

#include "../include/ot_cuda/ctx.h"

namespace ot_cuda::kernels {

inline constexpr int kElementwiseThreads = 256;

// Enough blocks to cover `count` once, at most `max_blocks` (the grid-stride
// loop covers the rest); at least one.
OT_HD constexpr unsigned elementwise_blocks(std::int64_t count, std::int64_t max_blocks = 4096) {
  const std::int64_t b = (count + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > max_blocks ? max_blocks : b);
}

// The global index and stride of a 1-D grid-stride loop.
template <class Ctx>
OT_HD OT_FORCEINLINE std::int64_t grid_index(Ctx& ctx) {
  return static_cast<std::int64_t>(ctx.block_idx().x) * ctx.block_dim().x + ctx.thread_idx().x;
}
template <class Ctx>
OT_HD OT_FORCEINLINE std::int64_t grid_stride(Ctx& ctx) {
  return static_cast<std::int64_t>(ctx.grid_dim().x) * ctx.block_dim().x;
}

}  // namespace ot_cuda::kernels
