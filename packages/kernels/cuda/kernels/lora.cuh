// The multi-LoRA op (issue 46; the CPU version is ../../src/cpu/lora.cc), on
// CUDA cores, written once: nvcc compiles it in lora.cu, the tests run it in
// the CPU execution (test/test_lora.cpp).
//
// The base product is done elsewhere; this op adds the adapters' deltas to a
// mixed batch of rows (prefill runs and single decode rows of many adapters,
// ranks differing, slot -1 = no adapter):
//
//   forward:  y[i] += s_a · (x[i] · A_aᵀ) · B_aᵀ        A_a [r_a, dIn], B_a [dOut, r_a]
//   backward: u[i]  = s_a · dy[i] · B_a                  (the rank-sized gradient)
//             dx[i] += u[i] · A_a
//             dA_a  += Σ_i u[i]ᵀ · x[i]
//             dB_a  += s_a · Σ_i dy[i]ᵀ · (x[i] · A_aᵀ)
//
// Rows are grouped on the host (lora_build_segments) into segments: runs of
// consecutive rows with the same slot, cut to at most kLoraSegRows rows. A run
// of prefill rows is several SGMV-style segments; a lone decode row is a
// one-row segment, which the same kernels run BGMV-style (one row per block,
// its x tile in shared memory, the adapter's weights read once per tile).
// Rows with slot -1 are in no segment: nothing reads or writes them.
//
// Three bodies, each a block per (segment, column tile), 128 threads:
//   lora_shrink  parts[tile][row][q] = Σ_{c in tile} z[row, c] · W(q, c)
//                (forward: z = x, W = A;  backward: z = dy, W = B as [r, dOut])
//   lora_expand  out[row, c] += s · Σ_q (Σ_tile parts)[row][q] · W(q, c)
//                (forward: out = y, W = B;  backward: out = dx, W = A)
//   lora_grad    G(q, c) += s · Σ_row (Σ_tile parts)[row][q] · z[row, c]
//                (dA: parts of dy·B, z = x;  dB: parts of x·Aᵀ, z = dy),
//                global atomics across the segments of one adapter.
// The shrink's partial sums per column tile (no atomics there) are summed in a
// fixed order by whoever reads them, so the forward is deterministic and a
// row's delta does not depend on what else is in the batch.
//
// "W(q, c)" names an adapter matrix by rank index q and its long index c:
// A_a[q, c] (c < dIn) is a[q·dIn + c]; B_a as [r, dOut] is b[c·r + q].
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../include/ot_cuda/reduce.h"

namespace ot_cuda::kernels {

inline constexpr int kLoraMaxRank = 64;
inline constexpr int kLoraSegRows = 8;      // rows per segment at most
inline constexpr int kLoraThreads = 128;    // every lora kernel's block
inline constexpr int kLoraShrinkTile = 256; // columns of z per shrink block
inline constexpr int kLoraTile = 128;       // columns per expand / grad block: one per thread

// One adapter as the kernels see it (device pointers in a device array).
struct LoraAdapterF32 {
  const float* a;  // [rank, d_in]
  const float* b;  // [d_out, rank]
  int rank;        // 1..kLoraMaxRank (0: the adapter adds nothing)
  float scale;
};
// Where the backward accumulates one adapter's gradients (same shapes as a, b).
struct LoraGradF32 {
  float* da;
  float* db;
};
// The CUDA backend writes these tables from TypeScript (src/backend/cuda/lora-tables.ts): the layout is a contract.
static_assert(sizeof(LoraAdapterF32) == 24 && offsetof(LoraAdapterF32, b) == 8 && offsetof(LoraAdapterF32, rank) == 16 &&
                  offsetof(LoraAdapterF32, scale) == 20,
              "LoraAdapterF32's layout is written by src/backend/cuda/lora-tables.ts");
static_assert(sizeof(LoraGradF32) == 16 && offsetof(LoraGradF32, db) == 8,
              "LoraGradF32's layout is written by src/backend/cuda/lora-tables.ts");
struct LoraSegment {
  int row_begin;  // first row
  int rows;       // 1..kLoraSegRows
  int slot;       // index into the adapter table
};

enum class LoraMatrix : int { A = 0, B = 1 };

// The index of W(q, c) in an adapter matrix (see above); `width` is the length
// of c's dimension (dIn for A, dOut for B).
OT_HD OT_FORCEINLINE std::size_t lora_index(LoraMatrix m, int q, int c, int rank, int width) {
  return m == LoraMatrix::A ? static_cast<std::size_t>(q) * width + c : static_cast<std::size_t>(c) * rank + q;
}

OT_HD constexpr int lora_tiles(int width, int tile) { return (width + tile - 1) / tile; }

// Launch shapes, shared by the device launchers and the tests.
OT_HD constexpr std::size_t lora_shrink_shared_bytes() {
  return static_cast<std::size_t>(kLoraSegRows) * kLoraShrinkTile * sizeof(float);
}
// The summed, scaled rank vectors of the segment, then (expand only) the W tile.
OT_HD constexpr std::size_t lora_expand_shared_bytes() {
  return (static_cast<std::size_t>(kLoraSegRows) * kLoraMaxRank + static_cast<std::size_t>(kLoraMaxRank) * kLoraTile) *
         sizeof(float);
}
OT_HD constexpr std::size_t lora_grad_shared_bytes() {
  return static_cast<std::size_t>(kLoraSegRows) * kLoraMaxRank * sizeof(float);
}
// The partial sums a shrink of z [n, width] writes: [tiles][n][rank_stride].
OT_HD constexpr std::size_t lora_parts_floats(int n, int width, int rank_stride) {
  return static_cast<std::size_t>(lora_tiles(width, kLoraShrinkTile)) * n * rank_stride;
}

// The workspaces the launchers need (floats): the forward's parts of x·Aᵀ; the
// backward's parts of x·Aᵀ, then those of dy·B.
OT_HD constexpr std::size_t lora_forward_workspace_floats(int n, int d_in, int rank_stride) {
  return lora_parts_floats(n, d_in, rank_stride);
}
OT_HD constexpr std::size_t lora_backward_workspace_floats(int n, int d_in, int d_out, int rank_stride) {
  return lora_parts_floats(n, d_in, rank_stride) + lora_parts_floats(n, d_out, rank_stride);
}

// ---- host side: the segment list ------------------------------------------

// Cuts slots[0..n) into segments: maximal runs of consecutive rows with the
// same slot >= 0, each cut into pieces of at most max_rows rows; rows with
// slot -1 are skipped. Returns false (out cleared) if a slot is < -1 or
// >= adapter_count, or max_rows is not in 1..kLoraSegRows.
inline bool lora_build_segments(const std::int32_t* slots, int n, int adapter_count, std::vector<LoraSegment>& out,
                                int max_rows = kLoraSegRows) {
  out.clear();
  if (max_rows < 1 || max_rows > kLoraSegRows) return false;
  for (int i = 0; i < n;) {
    const std::int32_t s = slots[i];
    if (s < -1 || s >= adapter_count) {
      out.clear();
      return false;
    }
    int j = i + 1;
    while (j < n && slots[j] == s) ++j;
    if (s >= 0) {
      for (int b = i; b < j; b += max_rows) out.push_back({b, j - b < max_rows ? j - b : max_rows, s});
    }
    i = j;
  }
  return true;
}

// ---- bodies ----------------------------------------------------------------

// grid = (segments, lora_tiles(width, kLoraShrinkTile)), block = kLoraThreads,
// shared = lora_shrink_shared_bytes(). z is [n, width]; W is m of each
// adapter with c over `width`. parts is [tiles][n][rank_stride].
template <class Ctx>
OT_HD void lora_shrink(Ctx& ctx, const LoraSegment* segments, const LoraAdapterF32* adapters, LoraMatrix m,
                       const float* z, int n, int width, float* parts, int rank_stride) {
  const LoraSegment seg = segments[ctx.block_idx().x];
  const LoraAdapterF32 ad = adapters[seg.slot];
  const int tile = static_cast<int>(ctx.block_idx().y);
  const int c0 = tile * kLoraShrinkTile;
  const int cw = width - c0 < kLoraShrinkTile ? width - c0 : kLoraShrinkTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int warps = kLoraThreads / kWarpSize;
  const float* w = m == LoraMatrix::A ? ad.a : ad.b;
  auto zs = shared_array<float>(ctx);  // [kLoraSegRows][kLoraShrinkTile]

  // The segment's rows of this column tile, coalesced.
  // Rows past the segment are zeros, so the loop below needs no row test.
  for (int i = tid; i < kLoraSegRows * cw; i += kLoraThreads) {
    const int r = i / cw, c = i % cw;
    zs.store(static_cast<std::size_t>(r) * kLoraShrinkTile + c,
             r < seg.rows ? z[static_cast<std::size_t>(seg.row_begin + r) * width + c0 + c] : 0.0f);
  }
  ctx.sync();

  // A warp per rank index: its lanes stride over the tile's columns, every
  // load of W serving all the segment's rows; then one butterfly per row.
  for (int q = warp; q < ad.rank; q += warps) {
    float acc[kLoraSegRows];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < kLoraSegRows; ++r) acc[r] = 0.0f;
    for (int c = lane; c < cw; c += kWarpSize) {
      const float wv = w[lora_index(m, q, c0 + c, ad.rank, width)];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int r = 0; r < kLoraSegRows; ++r) {
        acc[r] = ot_cuda::fma(wv, zs.load(static_cast<std::size_t>(r) * kLoraShrinkTile + c), acc[r]);
      }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < kLoraSegRows; ++r) {
      if (r < seg.rows) {  // seg.rows is the block's: the warp stays converged
        const float total = warp_sum(ctx, acc[r]);
        if (lane == 0) parts[(static_cast<std::size_t>(tile) * n + seg.row_begin + r) * rank_stride + q] = total;
      }
    }
  }
}

// Fills vs[r][q] (r < kLoraSegRows, q < rank) with scale · Σ_tile parts[tile][row][q],
// zero for r past the segment's rows (so the users' row loops need no test).
template <class Ctx, class Shared>
OT_HD OT_FORCEINLINE void lora_load_rank_vectors(Ctx& ctx, const Shared& vs, const LoraSegment& seg, int rank,
                                                 float scale, const float* parts, int tiles, int n, int rank_stride) {
  const int tid = static_cast<int>(ctx.linear_tid());
  for (int i = tid; i < kLoraSegRows * rank; i += kLoraThreads) {
    const int r = i / rank, q = i % rank;
    float s = 0.0f;
    if (r < seg.rows) {
      for (int t = 0; t < tiles; ++t) s += parts[(static_cast<std::size_t>(t) * n + seg.row_begin + r) * rank_stride + q];
    }
    vs.store(static_cast<std::size_t>(r) * kLoraMaxRank + q, scale * s);
  }
}

// grid = (segments, lora_tiles(width, kLoraTile)), block = kLoraThreads,
// shared = lora_expand_shared_bytes(). out is [n, width]; W is m of each
// adapter with c over `width`; parts came from lora_shrink (`tiles` of them).
template <class Ctx>
OT_HD void lora_expand(Ctx& ctx, const LoraSegment* segments, const LoraAdapterF32* adapters, LoraMatrix m,
                       const float* parts, int tiles, int n, int rank_stride, float* out, int width) {
  const LoraSegment seg = segments[ctx.block_idx().x];
  const LoraAdapterF32 ad = adapters[seg.slot];
  const int c0 = static_cast<int>(ctx.block_idx().y) * kLoraTile;
  const int cw = width - c0 < kLoraTile ? width - c0 : kLoraTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  const float* w = m == LoraMatrix::A ? ad.a : ad.b;
  auto vs = shared_array<float>(ctx);                                                     // [rows][kLoraMaxRank]
  auto ws = shared_array<float>(ctx, kLoraSegRows * kLoraMaxRank * sizeof(float));        // [rank][kLoraTile]

  lora_load_rank_vectors(ctx, vs, seg, ad.rank, ad.scale, parts, tiles, n, rank_stride);
  // W's tile, transposed so thread c reads ws[q][c] without bank conflicts;
  // the global reads follow memory order (c fastest for A, q fastest for B).
  for (int i = tid; i < ad.rank * cw; i += kLoraThreads) {
    const int q = m == LoraMatrix::A ? i / cw : i % ad.rank;
    const int c = m == LoraMatrix::A ? i % cw : i / ad.rank;
    ws.store(static_cast<std::size_t>(q) * kLoraTile + c, w[lora_index(m, q, c0 + c, ad.rank, width)]);
  }
  ctx.sync();

  if (tid < cw) {
    float acc[kLoraSegRows];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < kLoraSegRows; ++r) acc[r] = 0.0f;
    for (int q = 0; q < ad.rank; ++q) {
      const float wv = ws.load(static_cast<std::size_t>(q) * kLoraTile + tid);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int r = 0; r < kLoraSegRows; ++r) {
        acc[r] = ot_cuda::fma(vs.load(static_cast<std::size_t>(r) * kLoraMaxRank + q), wv, acc[r]);
      }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < kLoraSegRows; ++r) {
      if (r < seg.rows) out[static_cast<std::size_t>(seg.row_begin + r) * width + c0 + tid] += acc[r];
    }
  }
}

// grid = (segments, lora_tiles(width, kLoraTile)), block = kLoraThreads,
// shared = lora_grad_shared_bytes(). G(q, c) += scale · Σ_r v[r][q] · z[row r, c]
// with v from parts; G has m's layout with c over `width` (z is [n, width]).
// grads[slot].da when m is A, .db when B.
template <class Ctx>
OT_HD void lora_grad(Ctx& ctx, const LoraSegment* segments, const LoraAdapterF32* adapters, const LoraGradF32* grads,
                     LoraMatrix m, const float* parts, int tiles, int n, int rank_stride, const float* z, int width) {
  const LoraSegment seg = segments[ctx.block_idx().x];
  const LoraAdapterF32 ad = adapters[seg.slot];
  const int c0 = static_cast<int>(ctx.block_idx().y) * kLoraTile;
  const int cw = width - c0 < kLoraTile ? width - c0 : kLoraTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  float* g = m == LoraMatrix::A ? grads[seg.slot].da : grads[seg.slot].db;
  auto vs = shared_array<float>(ctx);  // [rows][kLoraMaxRank]

  lora_load_rank_vectors(ctx, vs, seg, ad.rank, ad.scale, parts, tiles, n, rank_stride);
  ctx.sync();

  if (tid < cw) {
    const int c = c0 + tid;
    float zr[kLoraSegRows];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < kLoraSegRows; ++r) {
      zr[r] = r < seg.rows ? z[static_cast<std::size_t>(seg.row_begin + r) * width + c] : 0.0f;
    }
    for (int q = 0; q < ad.rank; ++q) {
      float acc = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int r = 0; r < kLoraSegRows; ++r) acc = ot_cuda::fma(vs.load(static_cast<std::size_t>(r) * kLoraMaxRank + q), zr[r], acc);
      ctx.atomic_add(g + lora_index(m, q, c, ad.rank, width), acc);
    }
  }
}

}  // namespace ot_cuda::kernels
