// Token embedding, written once (device target embedding.cu, tests
// test/test_embedding.cpp), as ../../src/cpu/embedding.cc:
//
//   forward   out[i, :] = table[ids[i], :]   (a bf16 table widened to f32, exactly)
//   backward  d_table[ids[i], :] += d_out[i, :]
//
// One block per token i (grid.x = n); threads stride over the d columns, so
// reads and writes are coalesced. The backward adds with one atomic per
// element (atom.global.add.f32; ptxas makes it a RED): tokens with the same id, in this batch or
// across blocks, accumulate correctly, in an order that is not fixed (the
// CPU kernel adds in token order, so the last bits may differ). ids are
// trusted to be in [0, vocab) (the binding range-checks them).
#pragma once

#include "../include/ot_cuda/ctx.h"
#include "convert.cuh"

namespace ot_cuda::kernels {

// Whole warps, at most 256, each striding over a few columns.
OT_HD constexpr int embedding_block_threads(int d) {
  const int warps = (d + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}

template <class Ctx>
OT_HD void embedding_forward_f32(Ctx& ctx, const std::int32_t* ids, const float* table, float* out, int d) {
  const std::int64_t i = ctx.block_idx().x;
  const float* src = table + static_cast<std::int64_t>(ids[i]) * d;
  float* dst = out + i * d;
  for (int c = static_cast<int>(ctx.thread_idx().x), s = static_cast<int>(ctx.block_dim().x); c < d; c += s) {
    dst[c] = src[c];
  }
}

// The same gather from a bf16 table (the engine's frozen embeddings).
template <class Ctx>
OT_HD void embedding_forward_bf16(Ctx& ctx, const std::int32_t* ids, const std::uint16_t* table, float* out, int d) {
  const std::int64_t i = ctx.block_idx().x;
  const std::uint16_t* src = table + static_cast<std::int64_t>(ids[i]) * d;
  float* dst = out + i * d;
  for (int c = static_cast<int>(ctx.thread_idx().x), s = static_cast<int>(ctx.block_dim().x); c < d; c += s) {
    dst[c] = f32_from_bf16(src[c]);
  }
}

template <class Ctx>
OT_HD void embedding_backward_f32(Ctx& ctx, const std::int32_t* ids, const float* d_out, float* d_table, int d) {
  const std::int64_t i = ctx.block_idx().x;
  const float* src = d_out + i * d;
  float* dst = d_table + static_cast<std::int64_t>(ids[i]) * d;
  for (int c = static_cast<int>(ctx.thread_idx().x), s = static_cast<int>(ctx.block_dim().x); c < d; c += s) {
    ctx.atomic_add(dst + c, src[c]);
  }
}

}  // namespace ot_cuda::kernels
