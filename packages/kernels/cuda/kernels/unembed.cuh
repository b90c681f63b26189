// The fused unembedding log-probabilities and their backward, written once:
// nvcc compiles them in unembed.cu, the tests run them in the CPU execution
// (test/test_unembed.cpp) against the CPU backend (../../src/cpu/softmax.cc:
// ot::unembed_logprobs, ot::unembed_logprobs_backward).
//
//   logits[i, j] = Σ_c hidden[i, c] · W[j, c]        hidden [n, d], W [vocab, d]
//   lse_i        = log Σ_j exp(logits[i, j]),  logprobs_i = logits[i, t_i] − lse_i
//   G[i, j]      = g_i · (1[j = t_i] − exp(logits[i, j] − lse_i))
//   dHidden     += G · W,   dW += Gᵀ · hidden (when asked for)
//
// The [n, vocab] logits never exist whole: every kernel computes 64 × 64 tiles
// of them (rows × vocabulary) with gemm_f32.cuh's scheme (256 threads, thread
// tx = tid % 16, ty = tid / 16 owns rows ty·4 + i and columns tx + 16 j, i, j
// < 4; the d loop stages 16 at a time in shared memory, k-major, rows padded to
// 65 words). Everything is deterministic (no float atomics):
//   - forward, unembed_partials_f32: grid (vocabulary tiles, row tiles); each
//     tile row's max and Σ exp(logit − max) (f32) go to a workspace
//     [n, tiles] (unembed_workspace_bytes), reduced over the row's 16 threads
//     with half-warp shuffles; the thread holding a row's target logit writes
//     it to logprobs (a staging slot the next kernel reads);
//   - forward, unembed_combine_f32: one block per row folds the row's partials
//     into lse = M + log Σ_t s_t · exp(m_t − M) (f64 sum) and logprobs −= lse;
//   - backward, unembed_backward_hidden_f32: grid (d tiles, row tiles), each
//     block owns a 64 × 64 tile of dHidden and walks the whole vocabulary: per
//     vocabulary tile it recomputes the logits, turns them into G in shared
//     memory, stages W's matching [64 vocab, 64 d] slice and adds G · W_slice
//     (the logits are recomputed once per d tile: ⌈d / 64⌉ times);
//   - backward, unembed_backward_weight_f32: grid (d tiles, vocabulary tiles),
//     each block owns a 64 × 64 tile of dW and walks the rows the same way,
//     adding Gᵀ · hidden_slice.
// The exps are f32 (as the CPU backend's); a row whose max is ±inf gets lse =
// that max, as the CPU backend's. Targets are assumed in [0, vocab).
#pragma once

#include <cmath>
#include <cstdint>

#include "logprobs.cuh"

#if defined(__CUDA_ARCH__)
#define OT_UNEMBED_UNROLL _Pragma("unroll")
#else
#define OT_UNEMBED_UNROLL
#endif

namespace ot_cuda::kernels {

inline constexpr int kUnembedTile = 64;   // rows, vocabulary entries and d columns of a tile
inline constexpr int kUnembedTileK = 16;  // d per staged slice of the logits' product
inline constexpr int kUnembedThreads = 256;
inline constexpr int kUnembedRowWords = kUnembedTile + 1;  // padded: staging stores conflict ≤ 2 ways

OT_HD constexpr int unembed_tiles(int extent) { return (extent + kUnembedTile - 1) / kUnembedTile; }
OT_HD constexpr int unembed_block_threads() { return kUnembedThreads; }

// Shared memory: the two staged slices of the logits' product, then (backward
// only) G [64 rows][65] and the second operand's slice [64][65].
OT_HD constexpr std::size_t unembed_staging_bytes() {
  return static_cast<std::size_t>(2 * kUnembedTileK) * kUnembedRowWords * sizeof(float);
}
OT_HD constexpr std::size_t unembed_forward_shared_bytes() { return unembed_staging_bytes(); }
OT_HD constexpr std::size_t unembed_backward_shared_bytes() {
  return unembed_staging_bytes() + 2 * static_cast<std::size_t>(kUnembedTile) * kUnembedRowWords * sizeof(float);
}

// The forward's workspace: per (row, vocabulary tile) a max and a Σ exp.
OT_HD constexpr std::size_t unembed_workspace_bytes(int n, int vocab) {
  return 2 * static_cast<std::size_t>(n) * static_cast<std::size_t>(unembed_tiles(vocab)) * sizeof(float);
}

// Grids: unembed_partials (vocabulary tiles, row tiles); unembed_combine one
// block per row of logprobs_block_threads(tiles) threads and
// logprobs_shared_bytes of scratch; the backward (d tiles, row tiles) for
// dHidden and (d tiles, vocabulary tiles) for dW.
OT_HD constexpr Dim3 unembed_partials_grid(int n, int vocab) {
  return Dim3{static_cast<unsigned>(unembed_tiles(vocab)), static_cast<unsigned>(unembed_tiles(n)), 1};
}
OT_HD constexpr int unembed_combine_threads(int vocab) { return logprobs_block_threads(unembed_tiles(vocab)); }
OT_HD constexpr std::size_t unembed_combine_shared_bytes(int vocab) {
  return logprobs_shared_bytes(unembed_combine_threads(vocab));
}
OT_HD constexpr Dim3 unembed_backward_hidden_grid(int n, int d) {
  return Dim3{static_cast<unsigned>(unembed_tiles(d)), static_cast<unsigned>(unembed_tiles(n)), 1};
}
OT_HD constexpr Dim3 unembed_backward_weight_grid(int vocab, int d) {
  return Dim3{static_cast<unsigned>(unembed_tiles(d)), static_cast<unsigned>(unembed_tiles(vocab)), 1};
}

struct UnembedArgs {
  const float* hidden;  // [n, d]
  const float* w;       // [vocab, d]
  const std::int32_t* targets;
  int n, d, vocab;
};

// acc[i][j] = logits[row0 + ty·4 + i, col0 + tx + 16 j], 0 outside [n, vocab].
// Ends with a sync(): the staging slices may be written again right after.
template <class Ctx>
OT_HD OT_FORCEINLINE void unembed_tile_logits(Ctx& ctx, const UnembedArgs& a, int row0, int col0, float (&acc)[4][4]) {
  const auto sx = shared_array<float>(ctx, 0);
  const auto sw = shared_array<float>(ctx, kUnembedTileK * kUnembedRowWords * sizeof(float));
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }
  constexpr int kStage = kUnembedTile * kUnembedTileK;
  static_assert(kStage % kUnembedThreads == 0, "every thread stages the same number of elements");
  const std::size_t d = static_cast<std::size_t>(a.d);
  for (int k0 = 0; k0 < a.d; k0 += kUnembedTileK) {
    // Consecutive threads take consecutive c of a row (coalesced), stored k-major.
    OT_UNEMBED_UNROLL
    for (int s = 0; s < kStage / kUnembedThreads; ++s) {
      const int e = tid + s * kUnembedThreads;
      const int r = e / kUnembedTileK, kk = e % kUnembedTileK;
      const bool in_k = k0 + kk < a.d;
      const std::size_t c = static_cast<std::size_t>(k0 + kk);
      sx[kk * kUnembedRowWords + r] =
          in_k && row0 + r < a.n ? a.hidden[static_cast<std::size_t>(row0 + r) * d + c] : 0.0f;
      sw[kk * kUnembedRowWords + r] =
          in_k && col0 + r < a.vocab ? a.w[static_cast<std::size_t>(col0 + r) * d + c] : 0.0f;
    }
    ctx.sync();
    OT_UNEMBED_UNROLL
    for (int kk = 0; kk < kUnembedTileK; ++kk) {
      float x[4], y[4];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) x[i] = sx[kk * kUnembedRowWords + ty * 4 + i];
      OT_UNEMBED_UNROLL
      for (int j = 0; j < 4; ++j) y[j] = sw[kk * kUnembedRowWords + tx + 16 * j];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) {
        OT_UNEMBED_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] = ot_cuda::fma(x[i], y[j], acc[i][j]);
      }
    }
    ctx.sync();  // before the next slice overwrites what the threads read
  }
}

// Over the 16 threads sharing a tile row (lanes differing in bits 0..3).
template <class Ctx>
OT_HD OT_FORCEINLINE float unembed_row_max(Ctx& ctx, float v) {
  OT_UNEMBED_UNROLL
  for (int offset = 8; offset > 0; offset /= 2) v = ::fmaxf(v, ctx.shfl_xor_sync(kFullMask, v, offset));
  return v;
}
template <class Ctx>
OT_HD OT_FORCEINLINE float unembed_row_sum(Ctx& ctx, float v) {
  OT_UNEMBED_UNROLL
  for (int offset = 8; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Forward, first kernel: workspace [2][n][tiles] (max, then Σ exp), and the
// target's logit in logprobs.
template <class Ctx>
OT_HD void unembed_partials_f32(Ctx& ctx, const UnembedArgs& a, float* logprobs, float* workspace) {
  const int tile = static_cast<int>(ctx.block_idx().x), tiles = static_cast<int>(ctx.grid_dim().x);
  const int row0 = static_cast<int>(ctx.block_idx().y) * kUnembedTile, col0 = tile * kUnembedTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  float acc[4][4];
  unembed_tile_logits(ctx, a, row0, col0, acc);

  float* part_max = workspace;
  float* part_sum = workspace + static_cast<std::size_t>(a.n) * static_cast<std::size_t>(tiles);
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    const int target = row < a.n ? a.targets[row] : -1;
    // fmaxf skips NaN, as the CPU backend's std::max does; columns past the
    // vocabulary take no part.
    float m = -INFINITY;
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col < a.vocab) m = ::fmaxf(m, acc[i][j]);
      if (col == target) logprobs[row] = acc[i][j];
    }
    m = unembed_row_max(ctx, m);
    float s = 0.0f;
    if (m != INFINITY && m != -INFINITY) {  // uniform over the row's 16 threads
      OT_UNEMBED_UNROLL
      for (int j = 0; j < 4; ++j) {
        if (col0 + tx + 16 * j < a.vocab) s += ::expf(acc[i][j] - m);
      }
    }
    s = unembed_row_sum(ctx, s);
    if (tx == 0 && row < a.n) {
      const std::size_t at = static_cast<std::size_t>(row) * static_cast<std::size_t>(tiles) + tile;
      part_max[at] = m;
      part_sum[at] = s;
    }
  }
}

// Forward, second kernel: one block per row folds its tiles' partials.
template <class Ctx>
OT_HD void unembed_combine_f32(Ctx& ctx, const float* workspace, float* logprobs, float* lse, int n, int vocab) {
  const std::size_t row = ctx.block_idx().x;
  const int tiles = unembed_tiles(vocab);
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const unsigned warps = static_cast<unsigned>(stride) / kWarpSize;
  const float* part_max = workspace + row * static_cast<std::size_t>(tiles);
  const float* part_sum = part_max + static_cast<std::size_t>(n) * static_cast<std::size_t>(tiles);
  const auto scratch = shared_array<double>(ctx);

  float m = -INFINITY;
  for (int t = tid; t < tiles; t += stride) m = ::fmaxf(m, part_max[t]);
  m = logprobs_warp_max(ctx, m);
  if (ctx.lane() == 0) scratch[ctx.warp()] = m;
  ctx.sync();
  m = -INFINITY;
  for (unsigned w = 0; w < warps; ++w) m = ::fmaxf(m, static_cast<float>(scratch[w]));

  double sum = 0.0;
  if (m != INFINITY && m != -INFINITY) {  // uniform: every thread has the same m
    for (int t = tid; t < tiles; t += stride) {
      // A tile of -inf (m_t = -inf) adds nothing; a NaN partial poisons the sum, as NaN logits do on the CPU.
      const float mt = part_max[t];
      if (mt != -INFINITY) sum += static_cast<double>(part_sum[t]) * ::exp(static_cast<double>(mt) - m);
    }
  }
  sum = logprobs_warp_sum(ctx, sum);
  if (ctx.lane() == 0) scratch[warps + ctx.warp()] = sum;
  ctx.sync();
  if (tid == 0) {
    double total = 0.0;
    for (unsigned w = 0; w < warps; ++w) total += scratch[warps + w];
    const float l = (m == INFINITY || m == -INFINITY) ? m : m + static_cast<float>(::log(total));
    lse[row] = l;
    logprobs[row] -= l;
  }
}

// The backward's tile of G (rows row0.., vocabulary col0..) into sG [64][65]:
// G = g · (1[col = t] − exp(logit − lse)), f32 as the CPU backend's; 0 outside.
template <class Ctx, class Shared>
OT_HD OT_FORCEINLINE void unembed_tile_grad(Ctx& ctx, const UnembedArgs& a, const float* lse, const float* d_logprobs,
                                            int row0, int col0, const Shared& sg) {
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  float acc[4][4];
  unembed_tile_logits(ctx, a, row0, col0, acc);
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int r = ty * 4 + i, row = row0 + r;
    const bool in_row = row < a.n;
    const float l = in_row ? lse[row] : 0.0f, g = in_row ? d_logprobs[row] : 0.0f;
    const int target = in_row ? a.targets[row] : -1;
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int c = tx + 16 * j, col = col0 + c;
      float v = 0.0f;
      if (in_row && col < a.vocab) {
        v = -g * ::expf(acc[i][j] - l);
        if (col == target) v += g;
      }
      sg[r * kUnembedRowWords + c] = v;
    }
  }
}

// dHidden[row0 .. +64, d0 .. +64] += Σ over the vocabulary of G · W.
template <class Ctx>
OT_HD void unembed_backward_hidden_f32(Ctx& ctx, const UnembedArgs& a, const float* lse, const float* d_logprobs,
                                       float* d_hidden) {
  const auto sg = shared_array<float>(ctx, unembed_staging_bytes());
  const auto sb = shared_array<float>(ctx, unembed_staging_bytes() + kUnembedTile * kUnembedRowWords * sizeof(float));
  const int d0 = static_cast<int>(ctx.block_idx().x) * kUnembedTile;
  const int row0 = static_cast<int>(ctx.block_idx().y) * kUnembedTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  const std::size_t d = static_cast<std::size_t>(a.d);

  float out[4][4];
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) out[i][j] = 0.0f;
  }
  for (int col0 = 0; col0 < a.vocab; col0 += kUnembedTile) {
    unembed_tile_grad(ctx, a, lse, d_logprobs, row0, col0, sg);
    // W[col0 + v, d0 + c] as sb[v][c]: consecutive threads, consecutive c.
    OT_UNEMBED_UNROLL
    for (int s = 0; s < kUnembedTile * kUnembedTile / kUnembedThreads; ++s) {
      const int e = tid + s * kUnembedThreads;
      const int v = e / kUnembedTile, c = e % kUnembedTile;
      sb[v * kUnembedRowWords + c] =
          col0 + v < a.vocab && d0 + c < a.d
              ? a.w[static_cast<std::size_t>(col0 + v) * d + static_cast<std::size_t>(d0 + c)]
              : 0.0f;
    }
    ctx.sync();
    for (int v = 0; v < kUnembedTile; ++v) {
      float x[4], y[4];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) x[i] = sg[(ty * 4 + i) * kUnembedRowWords + v];
      OT_UNEMBED_UNROLL
      for (int j = 0; j < 4; ++j) y[j] = sb[v * kUnembedRowWords + tx + 16 * j];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) {
        OT_UNEMBED_UNROLL
        for (int j = 0; j < 4; ++j) out[i][j] = ot_cuda::fma(x[i], y[j], out[i][j]);
      }
    }
    ctx.sync();  // before the next tile overwrites sg and sb
  }
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row >= a.n) continue;
    float* dh = d_hidden + static_cast<std::size_t>(row) * d;
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int c = d0 + tx + 16 * j;
      if (c < a.d) dh[c] += out[i][j];
    }
  }
}

// dW[col0 .. +64, d0 .. +64] += Σ over the rows of Gᵀ · hidden.
template <class Ctx>
OT_HD void unembed_backward_weight_f32(Ctx& ctx, const UnembedArgs& a, const float* lse, const float* d_logprobs,
                                       float* d_w) {
  const auto sg = shared_array<float>(ctx, unembed_staging_bytes());
  const auto sb = shared_array<float>(ctx, unembed_staging_bytes() + kUnembedTile * kUnembedRowWords * sizeof(float));
  const int d0 = static_cast<int>(ctx.block_idx().x) * kUnembedTile;
  const int col0 = static_cast<int>(ctx.block_idx().y) * kUnembedTile;
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  const std::size_t d = static_cast<std::size_t>(a.d);

  float out[4][4];
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) out[i][j] = 0.0f;
  }
  for (int row0 = 0; row0 < a.n; row0 += kUnembedTile) {
    unembed_tile_grad(ctx, a, lse, d_logprobs, row0, col0, sg);
    // hidden[row0 + r, d0 + c] as sb[r][c].
    OT_UNEMBED_UNROLL
    for (int s = 0; s < kUnembedTile * kUnembedTile / kUnembedThreads; ++s) {
      const int e = tid + s * kUnembedThreads;
      const int r = e / kUnembedTile, c = e % kUnembedTile;
      sb[r * kUnembedRowWords + c] =
          row0 + r < a.n && d0 + c < a.d
              ? a.hidden[static_cast<std::size_t>(row0 + r) * d + static_cast<std::size_t>(d0 + c)]
              : 0.0f;
    }
    ctx.sync();
    for (int r = 0; r < kUnembedTile; ++r) {
      float x[4], y[4];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) x[i] = sg[r * kUnembedRowWords + ty * 4 + i];  // G[r][v], a broadcast per half-warp
      OT_UNEMBED_UNROLL
      for (int j = 0; j < 4; ++j) y[j] = sb[r * kUnembedRowWords + tx + 16 * j];
      OT_UNEMBED_UNROLL
      for (int i = 0; i < 4; ++i) {
        OT_UNEMBED_UNROLL
        for (int j = 0; j < 4; ++j) out[i][j] = ot_cuda::fma(x[i], y[j], out[i][j]);
      }
    }
    ctx.sync();  // before the next tile overwrites sg and sb
  }
  OT_UNEMBED_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int v = col0 + ty * 4 + i;
    if (v >= a.vocab) continue;
    float* dw = d_w + static_cast<std::size_t>(v) * d;
    OT_UNEMBED_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int c = d0 + tx + 16 * j;
      if (c < a.d) dw[c] += out[i][j];
    }
  }
}

}  // namespace ot_cuda::kernels

#undef OT_UNEMBED_UNROLL
