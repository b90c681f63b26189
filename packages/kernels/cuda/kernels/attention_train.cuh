// Training attention over packed sequences (the CPU version is
// ../../src/cpu/attention_train.cc), written once: nvcc compiles it in
// attention_train.cu, the tests run it in the CPU execution
// (test/test_attention_train.cpp).
//
// Sequences are concatenated along the token axis and delimited by seq_starts
// [num_seqs + 1] (non-decreasing, 0 … n_tokens; empty sequences allowed). q,
// out, dOut, dq are [n_tokens, num_heads, head_dim]; k, v, dk, dv are
// [n_tokens, num_kv_heads, head_dim]; lse is [n_tokens, num_heads]. Query head
// h uses kv head g = h / (num_heads / num_kv_heads) (GQA); token i of a
// sequence starting at token b attends to keys b … i:
//
//   s_ij = scale · q_i · k_j,  lse_i = log Σ_j e^(s_ij),  out_i = Σ_j e^(s_ij − lse_i) · v_j
//   backward (FlashAttention-2, probabilities recomputed from lse):
//   D_i = dOut_i · out_i,  p_ij = e^(s_ij − lse_i),  ds_ij = p_ij · (dOut_i · v_j − D_i)
//   dq_i = scale · Σ_j ds_ij · k_j,  dk_j = scale · Σ_i ds_ij · q_i,  dv_j = Σ_i p_ij · dOut_i
//
// Every kernel has kTrainThreads = 128 threads (4 warps); warp w owns query
// rows, lane l owns output columns l, l + 32, … (head_dim ≤ 128: four each).
//
//   forward:  one block per (16 query tokens, head). Keys in tiles of 32
//             (lane t ↔ key t of the tile) staged in shared memory, an online
//             softmax per row (warp w: rows 4w … 4w+3), acc = corr · acc + P·V.
//   delta:    one warp per (token, head): D_i, parked in dq[i, h, 0] (the dq
//             pass reads it back before overwriting the row: no workspace).
//   dkdv:     one block per (16 keys, kv head): every query row (token, query
//             head of the group) from the tile's first key to the end of its
//             last key's sequence, 16 rows at a time: P and dS [16 × 16] in
//             shared memory, then dk, dv accumulate in registers (warp w: keys
//             w, w + 4, …). Each dk/dv element is written by one thread once.
//   dq:       one block per (12 query tokens, head), the forward's loop with
//             dS in place of P (12 rows: q, dOut and the padded K/V tiles fit
//             48 KiB at head_dim 128). Each dq element is written once.
//
// No atomics: every output element has one owner, summed in a fixed order, so
// results do not depend on scheduling. The launcher runs delta, dkdv, dq in
// that order on one stream.
#pragma once

#include <cmath>
#include <cstdint>

#include "attention.cuh"  // attn_exp, attn_max, warp_max

namespace ot_cuda::kernels {

inline constexpr int kTrainThreads = 128;
inline constexpr int kTrainWarps = kTrainThreads / kWarpSize;
inline constexpr int kTrainMaxHeadDim = 128;
inline constexpr int kTrainCols = kTrainMaxHeadDim / kWarpSize;  // output columns per lane
inline constexpr int kTrainKeyTile = kWarpSize;                  // forward / dq: keys per tile, one per lane
inline constexpr int kFwdRowsPerWarp = 4;
inline constexpr int kFwdQueryTile = kFwdRowsPerWarp * kTrainWarps;  // 16 query tokens per forward block
inline constexpr int kDqRowsPerWarp = 3;
inline constexpr int kDqQueryTile = kDqRowsPerWarp * kTrainWarps;  // 12 query tokens per dq block
inline constexpr int kDkvKeyTile = 16;                             // keys per dkdv block
inline constexpr int kDkvRowBatch = 16;                            // query rows per dkdv step
inline constexpr int kDkvKeysPerWarp = kDkvKeyTile / kTrainWarps;
inline constexpr int kDeltaRowsPerBlock = kTrainWarps;  // one (token, head) row per warp

// The shapes every pass shares. seq_starts is device memory.
struct TrainAttnShape {
  const std::int32_t* seq_starts;  // [num_seqs + 1]
  int num_seqs, n_tokens, num_heads, num_kv_heads, head_dim;
  float scale;  // applied to q·k
};

struct TrainForwardParams {
  TrainAttnShape s;
  const float *q, *k, *v;
  float *out, *lse;
};

struct TrainBackwardParams {
  TrainAttnShape s;
  const float *q, *k, *v, *out, *lse, *d_out;
  float *dq, *dk, *dv;
};

// ---- launch shapes, shared by the device launchers and the tests ----------

OT_HD constexpr bool attention_train_supports(int num_heads, int num_kv_heads, int head_dim) {
  return num_kv_heads > 0 && num_heads > 0 && num_heads % num_kv_heads == 0 && head_dim > 0 &&
         head_dim <= kTrainMaxHeadDim;
}
OT_HD constexpr int train_tiles(int n, int tile) { return (n + tile - 1) / tile; }

// Grids: x = tiles of tokens, y = heads (forward, dq) or kv heads (dkdv).
OT_HD constexpr Dim3 attention_forward_grid(int n_tokens, int num_heads) {
  return {static_cast<unsigned>(train_tiles(n_tokens, kFwdQueryTile)), static_cast<unsigned>(num_heads), 1};
}
OT_HD constexpr Dim3 attention_dq_grid(int n_tokens, int num_heads) {
  return {static_cast<unsigned>(train_tiles(n_tokens, kDqQueryTile)), static_cast<unsigned>(num_heads), 1};
}
OT_HD constexpr Dim3 attention_dkdv_grid(int n_tokens, int num_kv_heads) {
  return {static_cast<unsigned>(train_tiles(n_tokens, kDkvKeyTile)), static_cast<unsigned>(num_kv_heads), 1};
}
OT_HD constexpr Dim3 attention_delta_grid(int n_tokens, int num_heads) {
  const long long rows = static_cast<long long>(n_tokens) * num_heads;
  return {static_cast<unsigned>((rows + kDeltaRowsPerBlock - 1) / kDeltaRowsPerBlock), 1, 1};
}

// Shared memory, in floats. K tiles are padded to head_dim + 1 floats a row
// (lane t reads row t: conflict-free); so are V tiles a lane reads by row.
// forward: q [16][d], K [32][d+1], V [32][d], P [16][32].
struct TrainFwdSmem {
  std::size_t q, k, v, p, floats;
};
OT_HD constexpr TrainFwdSmem attention_forward_smem(int head_dim) {
  const std::size_t d = static_cast<std::size_t>(head_dim);
  const std::size_t q = 0, k = q + kFwdQueryTile * d, v = k + kTrainKeyTile * (d + 1), p = v + kTrainKeyTile * d;
  return {q, k, v, p, p + kFwdQueryTile * kTrainKeyTile};
}
// dq: q [12][d], dOut [12][d], K [32][d+1], V [32][d+1], dS [12][32].
struct TrainDqSmem {
  std::size_t q, g, k, v, ds, floats;
};
OT_HD constexpr TrainDqSmem attention_dq_smem(int head_dim) {
  const std::size_t d = static_cast<std::size_t>(head_dim);
  const std::size_t q = 0, g = q + kDqQueryTile * d, k = g + kDqQueryTile * d, v = k + kTrainKeyTile * (d + 1),
                    ds = v + kTrainKeyTile * (d + 1);
  return {q, g, k, v, ds, ds + kDqQueryTile * kTrainKeyTile};
}
// dkdv: K, V [16][d+1], q, dOut [16][d+1] (threads of a warp read two rows),
// P, dS [16][16], per row lse, D and its key range [lo, hi] (int32).
struct TrainDkvSmem {
  std::size_t k, v, q, g, p, ds, lse, delta, lo, hi, floats;
};
OT_HD constexpr TrainDkvSmem attention_dkdv_smem(int head_dim) {
  const std::size_t dp = static_cast<std::size_t>(head_dim) + 1, r = kDkvRowBatch;
  const std::size_t k = 0, v = k + kDkvKeyTile * dp, q = v + kDkvKeyTile * dp, g = q + r * dp, p = g + r * dp,
                    ds = p + r * kDkvKeyTile, lse = ds + r * kDkvKeyTile, delta = lse + r, lo = delta + r, hi = lo + r;
  return {k, v, q, g, p, ds, lse, delta, lo, hi, hi + r};
}
OT_HD constexpr std::size_t attention_forward_shared_bytes(int head_dim) {
  return attention_forward_smem(head_dim).floats * sizeof(float);
}
OT_HD constexpr std::size_t attention_dq_shared_bytes(int head_dim) {
  return attention_dq_smem(head_dim).floats * sizeof(float);
}
OT_HD constexpr std::size_t attention_dkdv_shared_bytes(int head_dim) {
  return attention_dkdv_smem(head_dim).floats * sizeof(float);
}

// ---- helpers ---------------------------------------------------------------

// The sequence holding token i: the last s < num_seqs with seq_starts[s] <= i
// (so an empty sequence before i is skipped).
OT_HD OT_FORCEINLINE int train_seq_of(const std::int32_t* seq_starts, int num_seqs, int i) {
  int lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (seq_starts[mid] <= i) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

OT_HD OT_FORCEINLINE float train_log(float x) {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#else
  return std::log(x);
#endif
}

// Stages rows [first, first + rows) of head `head` of x ([n, heads, d]) into
// s (row r at r · stride), zeros past n_tokens (those rows are never attended
// to, but they are read).
template <class Ctx, class Shared>
OT_HD OT_FORCEINLINE void train_stage_rows(Ctx& ctx, const Shared& s, std::size_t stride, const float* x, int first,
                                           int rows, int n_tokens, int heads, int head, int d) {
  for (int e = static_cast<int>(ctx.linear_tid()); e < rows * d; e += kTrainThreads) {
    const int r = e / d, c = e % d, i = first + r;
    const float val = i < n_tokens ? x[(static_cast<std::size_t>(i) * heads + head) * d + c] : 0.0f;
    s.store(static_cast<std::size_t>(r) * stride + c, val);
  }
}

// ---- bodies ----------------------------------------------------------------

// grid = attention_forward_grid, block = kTrainThreads,
// shared = attention_forward_shared_bytes(head_dim).
template <class Ctx>
OT_HD void attention_train_forward(Ctx& ctx, const TrainForwardParams& a) {
  const TrainAttnShape& S = a.s;
  const int d = S.head_dim, n = S.n_tokens, h = static_cast<int>(ctx.block_idx().y);
  const int g = h / (S.num_heads / S.num_kv_heads);
  const int tid = static_cast<int>(ctx.linear_tid()), lane = static_cast<int>(ctx.lane());
  const int warp = static_cast<int>(ctx.warp());
  const int r0 = static_cast<int>(ctx.block_idx().x) * kFwdQueryTile;
  const int r_last = (r0 + kFwdQueryTile < n ? r0 + kFwdQueryTile : n) - 1;

  const TrainFwdSmem L = attention_forward_smem(d);
  auto qs = shared_array<float>(ctx, L.q * sizeof(float));
  auto ks = shared_array<float>(ctx, L.k * sizeof(float));
  auto vs = shared_array<float>(ctx, L.v * sizeof(float));
  auto ps = shared_array<float>(ctx, L.p * sizeof(float));
  train_stage_rows(ctx, qs, static_cast<std::size_t>(d), a.q, r0, kFwdQueryTile, n, S.num_heads, h, d);

  // This warp's rows: token i attends to keys [lo, i]; a row past n_tokens to none.
  int lo[kFwdRowsPerWarp], hi[kFwdRowsPerWarp];
  float m_run[kFwdRowsPerWarp], l_run[kFwdRowsPerWarp], acc[kFwdRowsPerWarp][kTrainCols];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < kFwdRowsPerWarp; ++i) {
    const int row = r0 + warp * kFwdRowsPerWarp + i;
    lo[i] = row < n ? S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, row)] : 1;
    hi[i] = row < n ? row : 0;
    m_run[i] = -INFINITY;
    l_run[i] = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int m = 0; m < kTrainCols; ++m) acc[i][m] = 0.0f;
  }

  // Keys from the first row's sequence start to the last row.
  const int k_first = S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, r0)];
  for (int t0 = k_first; t0 <= r_last; t0 += kTrainKeyTile) {
    const int nt = r_last + 1 - t0 < kTrainKeyTile ? r_last + 1 - t0 : kTrainKeyTile;
    for (int e = tid; e < nt * d; e += kTrainThreads) {
      const int t = e / d, c = e % d;
      const std::size_t at = (static_cast<std::size_t>(t0 + t) * S.num_kv_heads + g) * d + c;
      ks.store(static_cast<std::size_t>(t) * (d + 1) + c, a.k[at]);
      vs.store(static_cast<std::size_t>(t) * d + c, a.v[at]);
    }
    ctx.sync();

    // Scores of key t0 + lane against the warp's rows (q broadcast, K row lane).
    float dot[kFwdRowsPerWarp] = {};
    if (lane < nt) {
      for (int c = 0; c < d; ++c) {
        const float kc = ks.load(static_cast<std::size_t>(lane) * (d + 1) + c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int i = 0; i < kFwdRowsPerWarp; ++i) {
          dot[i] = ot_cuda::fma(qs.load(static_cast<std::size_t>(warp * kFwdRowsPerWarp + i) * d + c), kc, dot[i]);
        }
      }
    }
    // The online-softmax step of each row this tile reaches (warp-uniform);
    // a row it does not reach keeps its state (P row 0, corr 1).
    float corr[kFwdRowsPerWarp];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < kFwdRowsPerWarp; ++i) {
      const int key = t0 + lane;
      float p = 0.0f;
      corr[i] = 1.0f;
      if (t0 <= hi[i] && t0 + nt > lo[i]) {
        const bool valid = lane < nt && key >= lo[i] && key <= hi[i];
        const float s = valid ? S.scale * dot[i] : -INFINITY;
        const float m_new = attn_max(m_run[i], warp_max(ctx, s));  // finite: the tile reaches the row
        p = attn_exp(s - m_new);
        corr[i] = attn_exp(m_run[i] - m_new);  // 0 on the row's first tile
        l_run[i] = l_run[i] * corr[i] + warp_sum(ctx, p);
        m_run[i] = m_new;
      }
      ps.store(static_cast<std::size_t>(warp * kFwdRowsPerWarp + i) * kTrainKeyTile + lane, p);
    }
    ctx.sync();

    // acc = corr · acc + Σ_t p_t · V_t over the lane's columns.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int m = 0; m < kTrainCols; ++m) {
      const int c = lane + m * kWarpSize;
      if (c < d) {
        float x[kFwdRowsPerWarp];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int i = 0; i < kFwdRowsPerWarp; ++i) x[i] = acc[i][m] * corr[i];
        for (int t = 0; t < nt; ++t) {
          const float vt = vs.load(static_cast<std::size_t>(t) * d + c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
          for (int i = 0; i < kFwdRowsPerWarp; ++i) {
            x[i] = ot_cuda::fma(ps.load(static_cast<std::size_t>(warp * kFwdRowsPerWarp + i) * kTrainKeyTile + t), vt,
                                x[i]);
          }
        }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int i = 0; i < kFwdRowsPerWarp; ++i) acc[i][m] = x[i];
      }
    }
    ctx.sync();  // the next tile overwrites K, V and P
  }

#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < kFwdRowsPerWarp; ++i) {
    const int row = r0 + warp * kFwdRowsPerWarp + i;
    if (row < n) {
      const std::size_t at = static_cast<std::size_t>(row) * S.num_heads + h;
      const float inv = 1.0f / l_run[i];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int m = 0; m < kTrainCols; ++m) {
        const int c = lane + m * kWarpSize;
        if (c < d) a.out[at * d + c] = acc[i][m] * inv;
      }
      if (lane == 0) a.lse[at] = m_run[i] + train_log(l_run[i]);
    }
  }
}

// grid = attention_delta_grid, block = kTrainThreads, no shared memory:
// dq[i, h, 0] = D_i = dOut_i · out_i for row (i, h) = blockIdx.x · 4 + warp.
template <class Ctx>
OT_HD void attention_train_delta(Ctx& ctx, const TrainBackwardParams& a) {
  const int d = a.s.head_dim;
  const long long rows = static_cast<long long>(a.s.n_tokens) * a.s.num_heads;
  const long long row = static_cast<long long>(ctx.block_idx().x) * kDeltaRowsPerBlock + ctx.warp();
  if (row >= rows) return;  // warp-uniform, and no sync() in this body
  const std::size_t at = static_cast<std::size_t>(row) * d;
  float x = 0.0f;
  for (int c = static_cast<int>(ctx.lane()); c < d; c += kWarpSize) x = ot_cuda::fma(a.d_out[at + c], a.out[at + c], x);
  x = warp_sum(ctx, x);
  if (ctx.lane() == 0) a.dq[at] = x;
}

// grid = attention_dkdv_grid, block = kTrainThreads,
// shared = attention_dkdv_shared_bytes(head_dim). Reads D from dq (delta).
template <class Ctx>
OT_HD void attention_train_dkdv(Ctx& ctx, const TrainBackwardParams& a) {
  const TrainAttnShape& S = a.s;
  const int d = S.head_dim, n = S.n_tokens, g = static_cast<int>(ctx.block_idx().y);
  const int group = S.num_heads / S.num_kv_heads;
  const int tid = static_cast<int>(ctx.linear_tid()), lane = static_cast<int>(ctx.lane());
  const int warp = static_cast<int>(ctx.warp());
  const int k0 = static_cast<int>(ctx.block_idx().x) * kDkvKeyTile;
  const int nk = n - k0 < kDkvKeyTile ? n - k0 : kDkvKeyTile;
  const std::size_t dp = static_cast<std::size_t>(d) + 1;

  const TrainDkvSmem L = attention_dkdv_smem(d);
  auto ks = shared_array<float>(ctx, L.k * sizeof(float));
  auto vs = shared_array<float>(ctx, L.v * sizeof(float));
  auto qs = shared_array<float>(ctx, L.q * sizeof(float));
  auto gs = shared_array<float>(ctx, L.g * sizeof(float));
  auto ps = shared_array<float>(ctx, L.p * sizeof(float));
  auto dss = shared_array<float>(ctx, L.ds * sizeof(float));
  auto lse_s = shared_array<float>(ctx, L.lse * sizeof(float));
  auto delta_s = shared_array<float>(ctx, L.delta * sizeof(float));
  auto lo_s = shared_array<std::int32_t>(ctx, L.lo * sizeof(float));
  auto hi_s = shared_array<std::int32_t>(ctx, L.hi * sizeof(float));
  train_stage_rows(ctx, ks, dp, a.k, k0, nk, n, S.num_kv_heads, g, d);
  train_stage_rows(ctx, vs, dp, a.v, k0, nk, n, S.num_kv_heads, g, d);

  // Query rows are (token, query head of the group) pairs, token-major, from
  // the tile's first key to the end of the sequence of its last key.
  const int q_end = S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, k0 + nk - 1) + 1];
  const int rows = (q_end - k0) * group;

  // This thread's dk/dv elements: keys warp + 4u, columns lane + 32m.
  float dk[kDkvKeysPerWarp][kTrainCols], dv[kDkvKeysPerWarp][kTrainCols];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int u = 0; u < kDkvKeysPerWarp; ++u) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int m = 0; m < kTrainCols; ++m) dk[u][m] = dv[u][m] = 0.0f;
  }

  for (int b0 = 0; b0 < rows; b0 += kDkvRowBatch) {
    const int nb = rows - b0 < kDkvRowBatch ? rows - b0 : kDkvRowBatch;
    // Stage the batch's q and dOut rows (zeros past it) and their lse, D, [lo, hi].
    for (int e = tid; e < kDkvRowBatch * d; e += kTrainThreads) {
      const int r = e / d, c = e % d;
      float qv = 0.0f, gv = 0.0f;
      if (r < nb) {
        const int pr = b0 + r, i = k0 + pr / group, h = g * group + pr % group;
        const std::size_t at = (static_cast<std::size_t>(i) * S.num_heads + h) * d + c;
        qv = a.q[at];
        gv = a.d_out[at];
      }
      qs.store(static_cast<std::size_t>(r) * dp + c, qv);
      gs.store(static_cast<std::size_t>(r) * dp + c, gv);
    }
    if (tid < kDkvRowBatch) {
      int lo = 1, hi = 0;  // an empty key range past the batch
      float lse = 0.0f, delta = 0.0f;
      if (tid < nb) {
        const int pr = b0 + tid, i = k0 + pr / group, h = g * group + pr % group;
        const std::size_t row = static_cast<std::size_t>(i) * S.num_heads + h;
        lo = S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, i)];
        hi = i;
        lse = a.lse[row];
        delta = a.dq[row * d];
      }
      lo_s.store(static_cast<std::size_t>(tid), lo);
      hi_s.store(static_cast<std::size_t>(tid), hi);
      lse_s.store(static_cast<std::size_t>(tid), lse);
      delta_s.store(static_cast<std::size_t>(tid), delta);
    }
    ctx.sync();

    // P and dS: thread (key j = tid % 16, rows tid / 16 and tid / 16 + 8).
    {
      const int j = tid % kDkvKeyTile, key = k0 + j;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int e = 0; e < 2; ++e) {
        const int r = tid / kDkvKeyTile + e * (kTrainThreads / kDkvKeyTile);
        float p = 0.0f, ds = 0.0f;
        if (j < nk && key >= lo_s.load(static_cast<std::size_t>(r)) && key <= hi_s.load(static_cast<std::size_t>(r))) {
          float s = 0.0f, dpv = 0.0f;
          for (int c = 0; c < d; ++c) {
            s = ot_cuda::fma(qs.load(static_cast<std::size_t>(r) * dp + c),
                             ks.load(static_cast<std::size_t>(j) * dp + c), s);
            dpv = ot_cuda::fma(gs.load(static_cast<std::size_t>(r) * dp + c),
                               vs.load(static_cast<std::size_t>(j) * dp + c), dpv);
          }
          p = attn_exp(S.scale * s - lse_s.load(static_cast<std::size_t>(r)));
          ds = p * (dpv - delta_s.load(static_cast<std::size_t>(r)));
        }
        ps.store(static_cast<std::size_t>(r) * kDkvKeyTile + j, p);
        dss.store(static_cast<std::size_t>(r) * kDkvKeyTile + j, ds);
      }
    }
    ctx.sync();

    // dv_j += Σ_r p_rj · dOut_r, dk_j += Σ_r ds_rj · q_r (in row order).
    for (int r = 0; r < nb; ++r) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int u = 0; u < kDkvKeysPerWarp; ++u) {
        const int j = warp + u * kTrainWarps;
        const float p = ps.load(static_cast<std::size_t>(r) * kDkvKeyTile + j);
        const float ds = dss.load(static_cast<std::size_t>(r) * kDkvKeyTile + j);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int m = 0; m < kTrainCols; ++m) {
          const int c = lane + m * kWarpSize;
          if (c < d) {
            dv[u][m] = ot_cuda::fma(p, gs.load(static_cast<std::size_t>(r) * dp + c), dv[u][m]);
            dk[u][m] = ot_cuda::fma(ds, qs.load(static_cast<std::size_t>(r) * dp + c), dk[u][m]);
          }
        }
      }
    }
    ctx.sync();  // the next batch overwrites the rows, P and dS
  }

#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int u = 0; u < kDkvKeysPerWarp; ++u) {
    const int j = warp + u * kTrainWarps;
    if (j < nk) {
      const std::size_t at = (static_cast<std::size_t>(k0 + j) * S.num_kv_heads + g) * d;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int m = 0; m < kTrainCols; ++m) {
        const int c = lane + m * kWarpSize;
        if (c < d) {
          a.dk[at + c] = S.scale * dk[u][m];
          a.dv[at + c] = dv[u][m];
        }
      }
    }
  }
}

// grid = attention_dq_grid, block = kTrainThreads,
// shared = attention_dq_shared_bytes(head_dim). Reads D from dq[i, h, 0]
// (delta), then overwrites dq.
template <class Ctx>
OT_HD void attention_train_dq(Ctx& ctx, const TrainBackwardParams& a) {
  const TrainAttnShape& S = a.s;
  const int d = S.head_dim, n = S.n_tokens, h = static_cast<int>(ctx.block_idx().y);
  const int g = h / (S.num_heads / S.num_kv_heads);
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int r0 = static_cast<int>(ctx.block_idx().x) * kDqQueryTile;
  const int r_last = (r0 + kDqQueryTile < n ? r0 + kDqQueryTile : n) - 1;
  const std::size_t dp = static_cast<std::size_t>(d) + 1;

  const TrainDqSmem L = attention_dq_smem(d);
  auto qs = shared_array<float>(ctx, L.q * sizeof(float));
  auto gs = shared_array<float>(ctx, L.g * sizeof(float));
  auto ks = shared_array<float>(ctx, L.k * sizeof(float));
  auto vs = shared_array<float>(ctx, L.v * sizeof(float));
  auto dss = shared_array<float>(ctx, L.ds * sizeof(float));
  train_stage_rows(ctx, qs, static_cast<std::size_t>(d), a.q, r0, kDqQueryTile, n, S.num_heads, h, d);
  train_stage_rows(ctx, gs, static_cast<std::size_t>(d), a.d_out, r0, kDqQueryTile, n, S.num_heads, h, d);

  // This warp's rows: key range [lo, hi], lse, D (read before any dq write:
  // every later write of these rows is this warp's, after a sync()).
  int lo[kDqRowsPerWarp], hi[kDqRowsPerWarp];
  float lse[kDqRowsPerWarp], delta[kDqRowsPerWarp], acc[kDqRowsPerWarp][kTrainCols];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < kDqRowsPerWarp; ++i) {
    const int row = r0 + warp * kDqRowsPerWarp + i;
    const std::size_t at = static_cast<std::size_t>(row) * S.num_heads + h;
    lo[i] = row < n ? S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, row)] : 1;
    hi[i] = row < n ? row : 0;
    lse[i] = row < n ? a.lse[at] : 0.0f;
    delta[i] = row < n ? a.dq[at * d] : 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int m = 0; m < kTrainCols; ++m) acc[i][m] = 0.0f;
  }

  const int k_first = S.seq_starts[train_seq_of(S.seq_starts, S.num_seqs, r0)];
  for (int t0 = k_first; t0 <= r_last; t0 += kTrainKeyTile) {
    const int nt = r_last + 1 - t0 < kTrainKeyTile ? r_last + 1 - t0 : kTrainKeyTile;
    train_stage_rows(ctx, ks, dp, a.k, t0, nt, n, S.num_kv_heads, g, d);
    train_stage_rows(ctx, vs, dp, a.v, t0, nt, n, S.num_kv_heads, g, d);
    ctx.sync();

    // s = q·k and dOut·v of key t0 + lane against the warp's rows, then dS.
    float s[kDqRowsPerWarp] = {}, dpv[kDqRowsPerWarp] = {};
    if (lane < nt) {
      for (int c = 0; c < d; ++c) {
        const float kc = ks.load(static_cast<std::size_t>(lane) * dp + c);
        const float vc = vs.load(static_cast<std::size_t>(lane) * dp + c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int i = 0; i < kDqRowsPerWarp; ++i) {
          const std::size_t at = static_cast<std::size_t>(warp * kDqRowsPerWarp + i) * d + c;
          s[i] = ot_cuda::fma(qs.load(at), kc, s[i]);
          dpv[i] = ot_cuda::fma(gs.load(at), vc, dpv[i]);
        }
      }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < kDqRowsPerWarp; ++i) {
      const int key = t0 + lane;
      float ds = 0.0f;
      if (lane < nt && key >= lo[i] && key <= hi[i]) {
        ds = attn_exp(S.scale * s[i] - lse[i]) * (dpv[i] - delta[i]);
      }
      dss.store(static_cast<std::size_t>(warp * kDqRowsPerWarp + i) * kTrainKeyTile + lane, ds);
    }
    ctx.sync();

    // acc += Σ_t ds_t · K_t over the lane's columns.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int m = 0; m < kTrainCols; ++m) {
      const int c = lane + m * kWarpSize;
      if (c < d) {
        for (int t = 0; t < nt; ++t) {
          const float kt = ks.load(static_cast<std::size_t>(t) * dp + c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
          for (int i = 0; i < kDqRowsPerWarp; ++i) {
            acc[i][m] = ot_cuda::fma(dss.load(static_cast<std::size_t>(warp * kDqRowsPerWarp + i) * kTrainKeyTile + t),
                                     kt, acc[i][m]);
          }
        }
      }
    }
    ctx.sync();  // the next tile overwrites K, V and dS
  }

#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < kDqRowsPerWarp; ++i) {
    const int row = r0 + warp * kDqRowsPerWarp + i;
    if (row < n) {
      const std::size_t at = (static_cast<std::size_t>(row) * S.num_heads + h) * d;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int m = 0; m < kTrainCols; ++m) {
        const int c = lane + m * kWarpSize;
        if (c < d) a.dq[at + c] = S.scale * acc[i][m];
      }
    }
  }
}

}  // namespace ot_cuda::kernels
