// The multi-LoRA op with an adapter slot per row (BGMV-style; the CPU version
// is ../../src/cpu/lora.cc), on CUDA cores, written once: nvcc compiles it in
// lora_rows.cu, the tests run it in the CPU execution (test/test_lora_rows.cpp).
//
//   forward:  y[i]  += s_a · (x[i] · A_aᵀ) · B_aᵀ        a = slots[i], A_a [r_a, dIn], B_a [dOut, r_a]
//   backward: u[i]   = s_a · dy[i] · B_a                  (the rank-sized gradient)
//             dx[i] += u[i] · A_a                         (dx may be null)
//             dA_a  += Σ_{i: slots[i] = a} u[i]ᵀ · x[i]
//             dB_a  += s_a · Σ_{i: slots[i] = a} dy[i]ᵀ · (x[i] · A_aᵀ)
//
// Unlike lora.cuh (segments built on the host), the kernels read the slots
// array itself, a device buffer: nothing is grouped on the host. A slot
// outside [0, count) (-1: no adapter) leaves its row alone. Adapters and
// gradients are lora.cuh's LoraAdapterF32 / LoraGradF32; ranks may differ.
//
// Every body runs 128-thread blocks:
//   lora_rows_shrink_a  parts[split][i][q] = Σ_{c in split} z[i, c] · A(q, c)   grid (n, splits)
//   lora_rows_shrink_b  parts[split][i][q] = Σ_{c in split} z[i, c] · B(c, q)   grid (n, splits)
//                       (x through A in both passes; dy through B, backward)
//   lora_rows_reduce    parts[0][i][q] = Σ_split parts[split][i][q]            (backward only)
//   lora_rows_expand_b  y[i, c]  += s · Σ_q v[i][q] · B(c, q)                   grid (n, column tiles)
//   lora_rows_expand_a  dx[i, c] += s · Σ_q v[i][q] · A(q, c)                   grid (n, column tiles)
//   lora_rows_grad      G(q, c)  += s · Σ_{i of a} v[i][q] · z[i, c]           grid (tiles, rank chunks, count)
// where v[i] = Σ_split parts[split][i]. A split is a fixed set of 128-column
// chunks (chunk k goes to split k mod splits, splits a function of the width
// only), so a row's result never depends on the other rows in the batch, and
// every sum has one fixed order: the op is deterministic. The gradient blocks
// own their (adapter, columns, ranks) outright and walk the rows in order, so
// each gradient element gets exactly one atomic add per launch (atomic only
// so that two slots sharing one gradient buffer stay correct).
//
// Memory access: A's rows run along c, so A is read straight from global
// memory, coalesced. B [dOut, r] is [c][q]: a tile of 128 of its rows is one
// contiguous run, read coalesced into shared memory transposed to [q][c] with
// a padded stride (conflict-free both ways).
#pragma once

#include <cstdint>

#include "lora.cuh"

namespace ot_cuda::kernels {

inline constexpr int kLoraRowsThreads = 128;  // every block
inline constexpr int kLoraRowsWarps = kLoraRowsThreads / kWarpSize;
inline constexpr int kLoraRowsChunk = 128;                               // columns per chunk / tile: one per thread
inline constexpr int kLoraRowsPerLane = kLoraRowsChunk / kWarpSize;      // a lane's columns of a chunk
inline constexpr int kLoraRowsMaxSplits = 32;                            // shrink blocks per row at most
inline constexpr int kLoraRowsQPerWarp = kLoraMaxRank / kLoraRowsWarps;  // shrink: rank indices per warp
inline constexpr int kLoraRowsGradQ = 16;                                // rank indices per gradient block
inline constexpr int kLoraRowsStageStride = kLoraRowsChunk + 1;          // B tile in shared: [q][c], padded

// ---- launch shapes, shared by the device launchers and the tests ----------

OT_HD constexpr int lora_rows_chunks(int width) { return (width + kLoraRowsChunk - 1) / kLoraRowsChunk; }
// Shrink blocks per row: one per chunk up to kLoraRowsMaxSplits (a function
// of the width alone, so the summation order is too).
OT_HD constexpr int lora_rows_splits(int width) {
  return lora_rows_chunks(width) < kLoraRowsMaxSplits ? lora_rows_chunks(width) : kLoraRowsMaxSplits;
}
OT_HD constexpr int lora_rows_grad_q_chunks(int rank_stride) {
  return (rank_stride + kLoraRowsGradQ - 1) / kLoraRowsGradQ;
}
// B's tile, transposed: [kLoraMaxRank][kLoraRowsStageStride].
OT_HD constexpr std::size_t lora_rows_stage_bytes() {
  return static_cast<std::size_t>(kLoraMaxRank) * kLoraRowsStageStride * sizeof(float);
}
OT_HD constexpr std::size_t lora_rows_shrink_a_shared_bytes() { return 0; }
OT_HD constexpr std::size_t lora_rows_shrink_b_shared_bytes() { return lora_rows_stage_bytes(); }
// The row's scaled rank vector, then (B only) the staged tile.
OT_HD constexpr std::size_t lora_rows_expand_a_shared_bytes() { return kLoraMaxRank * sizeof(float); }
OT_HD constexpr std::size_t lora_rows_expand_b_shared_bytes() {
  return kLoraMaxRank * sizeof(float) + lora_rows_stage_bytes();
}
// Per chunk of kLoraRowsThreads rows: their rank vectors' slices [rows][GradQ],
// the matching rows' indices, and the per-warp match counts (double-buffered).
OT_HD constexpr std::size_t lora_rows_grad_shared_bytes() {
  return static_cast<std::size_t>(kLoraRowsThreads) * kLoraRowsGradQ * sizeof(float) +
         kLoraRowsThreads * sizeof(std::int32_t) + 2 * kLoraRowsWarps * sizeof(std::int32_t);
}
OT_HD constexpr int lora_rows_reduce_blocks(int n, int rank_stride) {
  return static_cast<int>((static_cast<std::int64_t>(n) * rank_stride + kLoraRowsThreads - 1) / kLoraRowsThreads);
}

// The partial sums a shrink of z [n, width] writes: [splits][n][rank_stride].
OT_HD constexpr std::size_t lora_rows_parts_floats(int n, int width, int rank_stride) {
  return static_cast<std::size_t>(lora_rows_splits(width)) * n * rank_stride;
}
// The launchers' workspaces (floats): the forward's parts of x·Aᵀ; the
// backward's parts of x·Aᵀ, then those of dy·B.
OT_HD constexpr std::size_t lora_rows_forward_workspace_floats(int n, int d_in, int rank_stride) {
  return lora_rows_parts_floats(n, d_in, rank_stride);
}
OT_HD constexpr std::size_t lora_rows_backward_workspace_floats(int n, int d_in, int d_out, int rank_stride) {
  return lora_rows_parts_floats(n, d_in, rank_stride) + lora_rows_parts_floats(n, d_out, rank_stride);
}

// ---- helpers ---------------------------------------------------------------

OT_HD OT_FORCEINLINE int lora_rows_popc(unsigned v) {
#if defined(__CUDA_ARCH__)
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}

// The adapter of a row, or -1 when its slot names none (-1, or out of range).
OT_HD OT_FORCEINLINE int lora_rows_slot(const std::int32_t* slots, int row, int count) {
  const std::int32_t s = slots[row];
  return s >= 0 && s < count ? s : -1;
}

// Copies B's rows [c0, c0 + cw) (one contiguous run of cw·rank floats) into
// ws[q · kLoraRowsStageStride + c], coalesced. The caller syncs around it.
template <class Ctx, class Shared>
OT_HD OT_FORCEINLINE void lora_rows_stage_b(Ctx& ctx, const Shared& ws, const float* b, int rank, int c0, int cw) {
  const float* run = b + static_cast<std::size_t>(c0) * rank;
  for (int i = static_cast<int>(ctx.linear_tid()); i < cw * rank; i += kLoraRowsThreads) {
    ws.store(static_cast<std::size_t>(i % rank) * kLoraRowsStageStride + i / rank, run[i]);
  }
}

// vs[q] = scale · Σ_split parts[split][row][q] for q < rank. The caller syncs after.
template <class Ctx, class Shared>
OT_HD OT_FORCEINLINE void lora_rows_load_vector(Ctx& ctx, const Shared& vs, const float* parts, int splits, int n,
                                                int rank_stride, int row, int rank, float scale) {
  const int q = static_cast<int>(ctx.linear_tid());
  if (q < rank) {
    float s = 0.0f;
    for (int t = 0; t < splits; ++t) s += parts[(static_cast<std::size_t>(t) * n + row) * rank_stride + q];
    vs.store(q, scale * s);
  }
}

// Warp w's rank indices are w, w + 4, ...: each lane's partial sums go through
// one butterfly per index, lane 0 writing the split's total.
template <class Ctx>
OT_HD OT_FORCEINLINE void lora_rows_store_parts(Ctx& ctx, const float (&acc)[kLoraRowsQPerWarp], int rank, float* parts,
                                                int n, int rank_stride, int row) {
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const std::size_t base = (static_cast<std::size_t>(ctx.block_idx().y) * n + row) * rank_stride;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kLoraRowsQPerWarp; ++j) {
    const int q = warp + j * kLoraRowsWarps;
    if (q < rank) {  // uniform across the warp: it stays converged
      const float total = warp_sum(ctx, acc[j]);
      if (lane == 0) parts[base + q] = total;
    }
  }
}

// ---- bodies ----------------------------------------------------------------

// grid = (n, lora_rows_splits(width)), block = kLoraRowsThreads, shared =
// lora_rows_shrink_a_shared_bytes(). parts[split][row][q] = Σ z[row, c] · A(q, c)
// over the split's chunks; z is [n, width], A of each adapter [rank, width].
// Each lane holds its 4 columns of z per chunk in registers and reads A's rows
// coalesced; no shared memory.
template <class Ctx>
OT_HD void lora_rows_shrink_a(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, int count,
                              const float* z, int n, int width, float* parts, int rank_stride) {
  const int row = static_cast<int>(ctx.block_idx().x);
  const int slot = lora_rows_slot(slots, row, count);
  if (slot < 0) return;  // the whole block: there is no sync() to miss
  const LoraAdapterF32 ad = adapters[slot];
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int step = static_cast<int>(ctx.grid_dim().y) * kLoraRowsChunk;
  const float* zr = z + static_cast<std::size_t>(row) * width;

  float acc[kLoraRowsQPerWarp];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kLoraRowsQPerWarp; ++j) acc[j] = 0.0f;
  for (int c0 = static_cast<int>(ctx.block_idx().y) * kLoraRowsChunk; c0 < width; c0 += step) {
    float zv[kLoraRowsPerLane];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int k = 0; k < kLoraRowsPerLane; ++k) {
      const int c = c0 + lane + k * kWarpSize;
      zv[k] = c < width ? zr[c] : 0.0f;
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < kLoraRowsQPerWarp; ++j) {
      const int q = warp + j * kLoraRowsWarps;
      if (q >= ad.rank) break;  // q grows with j
      const float* ar = ad.a + static_cast<std::size_t>(q) * width;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int k = 0; k < kLoraRowsPerLane; ++k) {
        const int c = c0 + lane + k * kWarpSize;
        if (c < width) acc[j] = ot_cuda::fma(ar[c], zv[k], acc[j]);
      }
    }
  }
  lora_rows_store_parts(ctx, acc, ad.rank, parts, n, rank_stride, row);
}

// grid = (n, lora_rows_splits(width)), block = kLoraRowsThreads, shared =
// lora_rows_shrink_b_shared_bytes(). parts[split][row][q] = Σ z[row, c] · B(c, q)
// over the split's chunks; z is [n, width], B of each adapter [width, rank].
// Each chunk of B is staged transposed, then read as in lora_rows_shrink_a.
template <class Ctx>
OT_HD void lora_rows_shrink_b(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, int count,
                              const float* z, int n, int width, float* parts, int rank_stride) {
  const int row = static_cast<int>(ctx.block_idx().x);
  const int slot = lora_rows_slot(slots, row, count);
  if (slot < 0) return;
  const LoraAdapterF32 ad = adapters[slot];
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int step = static_cast<int>(ctx.grid_dim().y) * kLoraRowsChunk;
  const float* zr = z + static_cast<std::size_t>(row) * width;
  auto ws = shared_array<float>(ctx);  // [kLoraMaxRank][kLoraRowsStageStride]

  float acc[kLoraRowsQPerWarp];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kLoraRowsQPerWarp; ++j) acc[j] = 0.0f;
  for (int c0 = static_cast<int>(ctx.block_idx().y) * kLoraRowsChunk; c0 < width; c0 += step) {
    const int cw = width - c0 < kLoraRowsChunk ? width - c0 : kLoraRowsChunk;
    ctx.sync();  // the previous chunk's reads of ws are done
    lora_rows_stage_b(ctx, ws, ad.b, ad.rank, c0, cw);
    ctx.sync();
    float zv[kLoraRowsPerLane];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int k = 0; k < kLoraRowsPerLane; ++k) {
      const int c = lane + k * kWarpSize;
      zv[k] = c < cw ? zr[c0 + c] : 0.0f;
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < kLoraRowsQPerWarp; ++j) {
      const int q = warp + j * kLoraRowsWarps;
      if (q >= ad.rank) break;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int k = 0; k < kLoraRowsPerLane; ++k) {
        const int c = lane + k * kWarpSize;
        // Columns past the tile were not staged: skip, not multiply by zero.
        if (c < cw) {
          acc[j] = ot_cuda::fma(ws.load(static_cast<std::size_t>(q) * kLoraRowsStageStride + c), zv[k], acc[j]);
        }
      }
    }
  }
  lora_rows_store_parts(ctx, acc, ad.rank, parts, n, rank_stride, row);
}

// grid = lora_rows_reduce_blocks(n, rank_stride), block = kLoraRowsThreads, no
// shared memory. parts[0][row][q] = Σ_split parts[split][row][q] in place, for
// the rows with an adapter and q below its rank (the only entries written).
template <class Ctx>
OT_HD void lora_rows_reduce(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, int count,
                            float* parts, int splits, int n, int rank_stride) {
  const std::int64_t e = static_cast<std::int64_t>(ctx.block_idx().x) * kLoraRowsThreads + ctx.linear_tid();
  if (e >= static_cast<std::int64_t>(n) * rank_stride) return;
  const int row = static_cast<int>(e / rank_stride), q = static_cast<int>(e % rank_stride);
  const int slot = lora_rows_slot(slots, row, count);
  if (slot < 0 || q >= adapters[slot].rank) return;
  float s = parts[e];
  for (int t = 1; t < splits; ++t) s += parts[static_cast<std::size_t>(t) * n * rank_stride + e];
  parts[e] = s;
}

// grid = (n, lora_tiles(width, kLoraRowsChunk)), block = kLoraRowsThreads,
// shared = lora_rows_expand_b_shared_bytes(). out[row, c] += s · Σ_q v[row][q] ·
// B(c, q), v summed from `splits` parts; out is [n, width], B [width, rank].
template <class Ctx>
OT_HD void lora_rows_expand_b(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, int count,
                              const float* parts, int splits, int n, int rank_stride, float* out, int width) {
  const int row = static_cast<int>(ctx.block_idx().x);
  const int slot = lora_rows_slot(slots, row, count);
  if (slot < 0) return;
  const LoraAdapterF32 ad = adapters[slot];
  const int c0 = static_cast<int>(ctx.block_idx().y) * kLoraRowsChunk;
  const int cw = width - c0 < kLoraRowsChunk ? width - c0 : kLoraRowsChunk;
  const int tid = static_cast<int>(ctx.linear_tid());
  auto vs = shared_array<float>(ctx);                                // [kLoraMaxRank]
  auto ws = shared_array<float>(ctx, kLoraMaxRank * sizeof(float));  // [kLoraMaxRank][kLoraRowsStageStride]

  lora_rows_load_vector(ctx, vs, parts, splits, n, rank_stride, row, ad.rank, ad.scale);
  lora_rows_stage_b(ctx, ws, ad.b, ad.rank, c0, cw);
  ctx.sync();
  if (tid < cw) {
    float acc = 0.0f;
    for (int q = 0; q < ad.rank; ++q) {
      acc = ot_cuda::fma(vs.load(q), ws.load(static_cast<std::size_t>(q) * kLoraRowsStageStride + tid), acc);
    }
    out[static_cast<std::size_t>(row) * width + c0 + tid] += acc;
  }
}

// grid = (n, lora_tiles(width, kLoraRowsChunk)), block = kLoraRowsThreads,
// shared = lora_rows_expand_a_shared_bytes(). out[row, c] += s · Σ_q v[row][q] ·
// A(q, c), v summed from `splits` parts; out is [n, width], A [rank, width]
// read coalesced along its rows.
template <class Ctx>
OT_HD void lora_rows_expand_a(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, int count,
                              const float* parts, int splits, int n, int rank_stride, float* out, int width) {
  const int row = static_cast<int>(ctx.block_idx().x);
  const int slot = lora_rows_slot(slots, row, count);
  if (slot < 0) return;
  const LoraAdapterF32 ad = adapters[slot];
  const int c = static_cast<int>(ctx.block_idx().y) * kLoraRowsChunk + static_cast<int>(ctx.linear_tid());
  auto vs = shared_array<float>(ctx);  // [kLoraMaxRank]

  lora_rows_load_vector(ctx, vs, parts, splits, n, rank_stride, row, ad.rank, ad.scale);
  ctx.sync();
  if (c < width) {
    float acc = 0.0f;
    for (int q = 0; q < ad.rank; ++q)
      acc = ot_cuda::fma(vs.load(q), ad.a[static_cast<std::size_t>(q) * width + c], acc);
    out[static_cast<std::size_t>(row) * width + c] += acc;
  }
}

// grid = (lora_tiles(width, kLoraRowsChunk), lora_rows_grad_q_chunks(rank_stride),
// count), block = kLoraRowsThreads, shared = lora_rows_grad_shared_bytes().
// For adapter a = blockIdx.z, rank indices q0 .. q0 + kLoraRowsGradQ and one
// column per thread: G(q, c) += s · Σ_{rows i of a, in order} v[i][q] · z[i, c],
// with v = parts[0] (reduced), z [n, width], G grads[a].da (m = A: [rank,
// width]) or .db (m = B: [width, rank]). The rows are found 128 at a time: a
// ballot per warp, compacted in order through shared memory.
template <class Ctx>
OT_HD void lora_rows_grad(Ctx& ctx, const std::int32_t* slots, const LoraAdapterF32* adapters, const LoraGradF32* grads,
                          int count, LoraMatrix m, const float* v, int n, int rank_stride, const float* z, int width) {
  const int slot = static_cast<int>(ctx.block_idx().z);
  const LoraAdapterF32 ad = adapters[slot];
  const int q0 = static_cast<int>(ctx.block_idx().y) * kLoraRowsGradQ;
  if (q0 >= ad.rank) return;  // the whole block
  const int tid = static_cast<int>(ctx.linear_tid());
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int c = static_cast<int>(ctx.block_idx().x) * kLoraRowsChunk + tid;
  const int qn = ad.rank - q0 < kLoraRowsGradQ ? ad.rank - q0 : kLoraRowsGradQ;
  constexpr std::size_t kVsBytes = static_cast<std::size_t>(kLoraRowsThreads) * kLoraRowsGradQ * sizeof(float);
  auto vs = shared_array<float>(ctx);                     // [kLoraRowsThreads][kLoraRowsGradQ]
  auto rows = shared_array<std::int32_t>(ctx, kVsBytes);  // [kLoraRowsThreads]
  auto counts = shared_array<std::int32_t>(ctx, kVsBytes + kLoraRowsThreads * sizeof(std::int32_t));  // [2][warps]

  float acc[kLoraRowsGradQ];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kLoraRowsGradQ; ++k) acc[k] = 0.0f;
  for (int base = 0, parity = 0; base < n; base += kLoraRowsThreads, parity ^= 1) {
    // This chunk's rows of the adapter, in order. counts alternates halves, so
    // a block that skips an empty chunk (one sync) never overwrites the
    // counts another warp is still reading.
    const bool mine = base + tid < n && lora_rows_slot(slots, base + tid, count) == slot;
    const unsigned ballot = ctx.ballot_sync(kFullMask, mine);
    if (lane == 0) counts.store(parity * kLoraRowsWarps + warp, lora_rows_popc(ballot));
    ctx.sync();
    int before = 0, found = 0;
    for (int w = 0; w < kLoraRowsWarps; ++w) {
      const int k = counts.load(parity * kLoraRowsWarps + w);
      before += w < warp ? k : 0;
      found += k;
    }
    if (found == 0) continue;  // found is the block's: uniform
    if (mine) rows.store(before + lora_rows_popc(ballot & ((1u << lane) - 1u)), base + tid);
    ctx.sync();
    for (int i = tid; i < found * qn; i += kLoraRowsThreads) {
      const int r = i / qn, k = i % qn;
      vs.store(static_cast<std::size_t>(r) * kLoraRowsGradQ + k,
               ad.scale * v[static_cast<std::size_t>(rows.load(r)) * rank_stride + q0 + k]);
    }
    ctx.sync();
    if (c < width) {
      for (int r = 0; r < found; ++r) {
        const float zc = z[static_cast<std::size_t>(rows.load(r)) * width + c];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int k = 0; k < kLoraRowsGradQ; ++k) {
          if (k < qn) acc[k] = ot_cuda::fma(vs.load(static_cast<std::size_t>(r) * kLoraRowsGradQ + k), zc, acc[k]);
        }
      }
    }
  }
  if (c < width) {
    float* g = m == LoraMatrix::A ? grads[slot].da : grads[slot].db;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int k = 0; k < kLoraRowsGradQ; ++k) {
      if (k < qn) ctx.atomic_add(g + lora_index(m, q0 + k, c, ad.rank, width), acc[k]);
    }
  }
}

}  // namespace ot_cuda::kernels
