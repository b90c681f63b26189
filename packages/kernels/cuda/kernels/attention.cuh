// Serving attention over the paged KV cache (the CPU version is
// ../../src/cpu/attention.cc), written once: nvcc compiles it in attention.cu,
// the tests run it in the CPU execution (test/test_attention.cpp).
//
// The cache is vLLM's: key and value are [num_blocks, block_size, num_kv_heads,
// head_dim] each, a token's "slot" is block · block_size + offset, and sequence
// s's block table (row s of block_tables [num_seqs, max_blocks_per_seq]) maps
// its logical block b (positions b·block_size ...) to a physical block.
//
//   cache_write:      k, v [n, num_kv_heads · head_dim] into their slots
//                     (slot_mapping[i]; -1 = skip: padding, or a token whose
//                     block is a shared prefix already written).
//   paged_attention:  row i (sequence row_seq[i] at position row_pos[i]: a
//                     decode row or a row of a chunked prefill) attends
//                     causally over its sequence's cached keys 0..p:
//                       out[i, h] = Σ_t softmax_t(scale · q[i, h] · K[t, g]) · V[t, g]
//                     with g = h / (num_heads / num_kv_heads) (GQA). Every
//                     row's own K/V must be in the cache first (cache_write).
//
// paged_attention: one block per (row, kv head), kAttnThreads threads; the
// kv head's `group` query heads share every K/V tile the block stages in
// shared memory. Keys go in tiles of kAttnTile = 32 positions (lane t ↔ key t
// of the tile) with an online softmax: warp w owns heads w, w + 4 (scores,
// running max and sum in its registers), and thread o owns output elements
// o, o + kAttnThreads, ... of the group's [group, head_dim] accumulator.
// Per tile: stage K/V | scores, max, exp, sum (per head, one warp) | acc =
// corr · acc + Σ_t p_t · V_t | next tile. Limits: head_dim ≤ kAttnMaxHeadDim,
// group ≤ kAttnMaxGroup (the launcher refuses the rest).
#pragma once

#include <cstdint>

#include "../include/ot_cuda/reduce.h"

namespace ot_cuda::kernels {

inline constexpr int kAttnThreads = 128;
inline constexpr int kAttnWarps = kAttnThreads / kWarpSize;
inline constexpr int kAttnTile = kWarpSize;  // key positions per tile: one per lane
inline constexpr int kAttnMaxHeadDim = 128;
inline constexpr int kAttnMaxGroup = 2 * kAttnWarps;  // query heads per kv head: two per warp
inline constexpr int kAttnOutPerThread = kAttnMaxGroup * kAttnMaxHeadDim / kAttnThreads;
inline constexpr int kCacheWriteMaxThreads = 256;

struct PagedAttentionParams {
  const float* q;    // [n_rows, num_heads, head_dim]
  float* out;        // [n_rows, num_heads, head_dim]
  const std::int32_t* row_seq;       // [n_rows]
  const std::int32_t* row_pos;       // [n_rows]
  const std::int32_t* block_tables;  // [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq;
  const float* key_cache;    // [num_blocks, block_size, num_kv_heads, head_dim]
  const float* value_cache;  // same
  int block_size, num_heads, num_kv_heads, head_dim;
  float scale;
};

// ---- launch shapes, shared by the device launchers and the tests ----------

// cache_write: grid = n tokens, a block of whole warps striding over a row.
OT_HD constexpr int cache_write_block_threads(int row_floats) {
  const int warps = (row_floats + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > kCacheWriteMaxThreads / kWarpSize ? kCacheWriteMaxThreads / kWarpSize : warps) *
         kWarpSize;
}

// paged_attention's shared memory, in floats: q [group][d], K tile
// [kAttnTile][d + 1] (padded: lane t reads row t, conflict-free), V tile
// [kAttnTile][d], probabilities [group][kAttnTile], corr [group], sum [group].
struct AttnSmem {
  std::size_t q, k, v, p, corr, sum, floats;
};
OT_HD constexpr AttnSmem attn_smem_layout(int group, int head_dim) {
  const std::size_t g = static_cast<std::size_t>(group), d = static_cast<std::size_t>(head_dim);
  const std::size_t q = 0, k = q + g * d, v = k + kAttnTile * (d + 1), p = v + kAttnTile * d, corr = p + g * kAttnTile,
                    sum = corr + g;
  return {q, k, v, p, corr, sum, sum + g};
}
OT_HD constexpr std::size_t paged_attention_shared_bytes(int group, int head_dim) {
  return attn_smem_layout(group, head_dim).floats * sizeof(float);
}
// Whether the kernel supports a head shape (the launcher's check, and the tests').
OT_HD constexpr bool paged_attention_supports(int num_heads, int num_kv_heads, int head_dim) {
  return num_kv_heads > 0 && num_heads > 0 && num_heads % num_kv_heads == 0 &&
         num_heads / num_kv_heads <= kAttnMaxGroup && head_dim > 0 && head_dim <= kAttnMaxHeadDim;
}

OT_HD OT_FORCEINLINE float attn_exp(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  return std::exp(x);
#endif
}
OT_HD OT_FORCEINLINE float attn_max(float a, float b) {
#if defined(__CUDA_ARCH__)
  return ::fmaxf(a, b);
#else
  return a > b ? a : b;  // never NaN here: scores are finite or -inf
#endif
}

template <class Ctx>
OT_HD OT_FORCEINLINE float warp_max(Ctx& ctx, float v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = attn_max(v, ctx.shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// ---- bodies ----------------------------------------------------------------

// grid = n_tokens, block = cache_write_block_threads(num_kv_heads · head_dim),
// no shared memory. Slots < 0 or >= num_slots (= num_blocks · block_size) are
// skipped.
template <class Ctx>
OT_HD void cache_write(Ctx& ctx, const float* k, const float* v, const std::int32_t* slot_mapping, float* key_cache,
                       float* value_cache, std::int64_t num_slots, int row_floats) {
  const std::size_t i = ctx.block_idx().x;
  const std::int32_t slot = slot_mapping[i];
  if (slot < 0 || slot >= num_slots) return;  // no sync() in this body: leaving early is fine
  const std::size_t src = i * static_cast<std::size_t>(row_floats);
  const std::size_t dst = static_cast<std::size_t>(slot) * static_cast<std::size_t>(row_floats);
  const int stride = static_cast<int>(ctx.block_dim().x);
  for (int c = static_cast<int>(ctx.thread_idx().x); c < row_floats; c += stride) {
    key_cache[dst + c] = k[src + c];
    value_cache[dst + c] = v[src + c];
  }
}

// grid = (n_rows, num_kv_heads), block = kAttnThreads,
// shared = paged_attention_shared_bytes(group, head_dim).
template <class Ctx>
OT_HD void paged_attention(Ctx& ctx, const PagedAttentionParams& a) {
  const int row = static_cast<int>(ctx.block_idx().x), g = static_cast<int>(ctx.block_idx().y);
  const int tid = static_cast<int>(ctx.linear_tid());
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int d = a.head_dim, group = a.num_heads / a.num_kv_heads, outs = group * d;
  const int pos = a.row_pos[row];
  const std::int32_t* table = a.block_tables + static_cast<std::size_t>(a.row_seq[row]) * a.max_blocks_per_seq;
  const std::size_t kv_row = static_cast<std::size_t>(a.num_kv_heads) * d;  // floats per slot
  const std::size_t head_off = static_cast<std::size_t>(g) * d;
  // The group's query heads are consecutive: q[row, g·group + h, :] for h < group.
  const std::size_t q_off = (static_cast<std::size_t>(row) * a.num_heads + static_cast<std::size_t>(g) * group) * d;

  const AttnSmem L = attn_smem_layout(group, d);
  auto qs = shared_array<float>(ctx, L.q * sizeof(float));
  auto ks = shared_array<float>(ctx, L.k * sizeof(float));
  auto vs = shared_array<float>(ctx, L.v * sizeof(float));
  auto ps = shared_array<float>(ctx, L.p * sizeof(float));
  auto corr_s = shared_array<float>(ctx, L.corr * sizeof(float));
  auto sum_s = shared_array<float>(ctx, L.sum * sizeof(float));

  for (int i = tid; i < outs; i += kAttnThreads) qs.store(static_cast<std::size_t>(i), a.q[q_off + i]);

  // Per warp: the running max and sum of its heads w, w + kAttnWarps (every
  // lane holds the same values). Per thread: its output elements.
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  float acc[kAttnOutPerThread];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kAttnOutPerThread; ++j) acc[j] = 0.0f;

  for (int t0 = 0; t0 <= pos; t0 += kAttnTile) {
    const int n = pos + 1 - t0 < kAttnTile ? pos + 1 - t0 : kAttnTile;  // keys of this tile
    // Stage the tile's n K and V rows (coalesced along head_dim). Rows past
    // the causal limit are neither loaded nor read (the nan_fill mode checks).
    for (int i = tid; i < n * d; i += kAttnThreads) {
      const int t = i / d, c = i % d, p = t0 + t;
      const std::size_t slot =
          static_cast<std::size_t>(table[p / a.block_size]) * a.block_size + static_cast<std::size_t>(p % a.block_size);
      const std::size_t at = slot * kv_row + head_off + c;
      ks.store(static_cast<std::size_t>(t) * (d + 1) + c, a.key_cache[at]);
      vs.store(static_cast<std::size_t>(t) * d + c, a.value_cache[at]);
    }
    ctx.sync();

    // Scores and the online-softmax step, one warp per head, lane t ↔ key t.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 2; ++j) {
      const int h = warp + j * kAttnWarps;
      if (h < group) {  // warp-uniform
        float s = -INFINITY;
        if (lane < n) {
          float dot = 0.0f;
          for (int c = 0; c < d; ++c) {
            dot = ot_cuda::fma(qs.load(static_cast<std::size_t>(h) * d + c),
                               ks.load(static_cast<std::size_t>(lane) * (d + 1) + c), dot);
          }
          s = a.scale * dot;
        }
        const float m_new = attn_max(m_run[j], warp_max(ctx, s));  // finite: key t0 <= pos is in every tile
        const float p = attn_exp(s - m_new);                        // 0 for keys past the limit
        const float corr = attn_exp(m_run[j] - m_new);              // 0 on the first tile
        l_run[j] = l_run[j] * corr + warp_sum(ctx, p);
        m_run[j] = m_new;
        ps.store(static_cast<std::size_t>(h) * kAttnTile + lane, p);
        if (lane == 0) corr_s.store(static_cast<std::size_t>(h), corr);
      }
    }
    ctx.sync();

    // acc = corr · acc + Σ_t p_t · V_t for each owned (head, column).
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < kAttnOutPerThread; ++j) {
      const int o = tid + j * kAttnThreads;
      if (o < outs) {
        const int h = o / d, c = o % d;
        float x = acc[j] * corr_s.load(static_cast<std::size_t>(h));
        for (int t = 0; t < n; ++t) {
          x = ot_cuda::fma(ps.load(static_cast<std::size_t>(h) * kAttnTile + t),
                           vs.load(static_cast<std::size_t>(t) * d + c), x);
        }
        acc[j] = x;
      }
    }
    ctx.sync();  // the next tile overwrites K, V, p and corr
  }

  // Publish each head's softmax sum, then normalise.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < 2; ++j) {
    const int h = warp + j * kAttnWarps;
    if (h < group && lane == 0) sum_s.store(static_cast<std::size_t>(h), l_run[j]);
  }
  ctx.sync();
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kAttnOutPerThread; ++j) {
    const int o = tid + j * kAttnThreads;
    if (o < outs) a.out[q_off + o] = acc[j] / sum_s.load(static_cast<std::size_t>(o / d));
  }
}

}  // namespace ot_cuda::kernels
