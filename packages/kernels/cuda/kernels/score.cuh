// Scores of rows of logits (scoreRows), written once: nvcc compiles it in
// score.cu, the tests run it in the CPU execution (test/test_score.cpp) against
// the CPU backend's rules (../../src/cpu/sample.cc: ScoreRows and top_k, with
// sample_draw.cc's row_stats for the log-sum-exp).
//
//   logprobs[r]        = logits[r, t_r] − lse_r            (f64)
//   topIds[r, j]       = the j-th token of row r in the candidates' order:
//                        larger logit first, ties to the lower id, NaN as -inf
//   topLogprobs[r, j]  = logits[r, topIds[r, j]] − lse_r   (f64)
// with lse_r = f32(max + log Σ_i exp(f64(logits[r, i] − max))) as row_stats
// computes it (the difference in f32, the sum in f64, the result rounded to f32;
// NaN for a row without a finite max, as on the CPU).
//
// One block per row (grid.x = rows), a whole number of warps
// (score_block_threads). The order is sample.cuh's 64-bit rank R(i) (the
// logit's ordered bits, then the id reversed; larger first), so every token has
// a distinct key and ties need no special case. Pass 1: each thread keeps its
// own K best ranks (K = score_local_k(k), a power of two ≥ k, a compile-time
// constant so the list lives in registers), sorted, inserting by a branch-free
// compare-exchange only when a rank beats its K-th. Then k rounds (at least
// one, for the max): a block-wide max of the threads' heads, whose owner pops
// it; round 0's winner is the row's max. Pass 2: Σ exp(logit − max) in f64.
// Then threads j < k write the j-th candidate. k ≤ kScoreMaxK.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "sample.cuh"

#if defined(__CUDA_ARCH__)
#define OT_SCORE_UNROLL _Pragma("unroll")
#else
#define OT_SCORE_UNROLL
#endif

namespace ot_cuda::kernels {

inline constexpr int kScoreMaxK = 32;
inline constexpr int kScoreMaxWarps = 8;

OT_HD constexpr int score_block_threads(int vocab) {
  const int warps = (vocab + 8 * kWarpSize - 1) / (8 * kWarpSize);  // ≥ 8 tokens a thread
  return (warps < 1 ? 1 : warps > kScoreMaxWarps ? kScoreMaxWarps : warps) * kWarpSize;
}
// The length of each thread's list: the smallest power of two ≥ max(k, 1).
OT_HD constexpr int score_local_k(int k) {
  int n = 1;
  while (n < k) n *= 2;
  return n;
}
// Shared: the max reductions' scratch (2 parities × kScoreMaxWarps u64), the
// sum's (kScoreMaxWarps f64), then the k winners' ids (kScoreMaxK i32).
OT_HD constexpr std::size_t score_sum_offset() { return 2 * kScoreMaxWarps * sizeof(std::uint64_t); }
OT_HD constexpr std::size_t score_ids_offset() { return score_sum_offset() + kScoreMaxWarps * sizeof(double); }
OT_HD constexpr std::size_t score_shared_bytes() { return score_ids_offset() + kScoreMaxK * sizeof(std::int32_t); }

struct ScoreArgs {
  const float* logits;  // [rows, vocab]
  const std::int32_t* targets;
  int vocab, k;
  double* logprobs;       // [rows]
  std::int32_t* top_ids;  // [rows, k]
  double* top_logprobs;   // [rows, k]
};

OT_HD OT_FORCEINLINE int score_id(std::uint64_t rank) {
  return static_cast<int>(0xffffffffu - static_cast<std::uint32_t>(rank & 0xffffffffu));
}

// Inserts r into top (descending, distinct, 0 = empty), dropping the last:
// position s takes max(min(r, top[s − 1]), top[s]), from the end.
template <int K>
OT_HD OT_FORCEINLINE void score_insert(std::uint64_t (&top)[K], std::uint64_t r) {
  OT_SCORE_UNROLL
  for (int s = K - 1; s > 0; --s) {
    const std::uint64_t lower = r < top[s - 1] ? r : top[s - 1];
    top[s] = lower > top[s] ? lower : top[s];
  }
  top[0] = r > top[0] ? r : top[0];
}

// The largest u64 over the block, every thread receiving it; parity as sample_reduce's.
template <class Ctx, class Red>
OT_HD OT_FORCEINLINE std::uint64_t score_block_max(Ctx& ctx, std::uint64_t v, const Red& red, unsigned& parity) {
  OT_SCORE_UNROLL
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const std::uint64_t o = ctx.shfl_xor_sync(kFullMask, v, offset);
    v = o > v ? o : v;
  }
  const unsigned warps = ctx.block_dim().x / kWarpSize, base = parity * kScoreMaxWarps;
  if (ctx.lane() == 0) red[base + ctx.warp()] = v;
  ctx.sync();
  v = red[base];
  for (unsigned w = 1; w < warps; ++w) {
    const std::uint64_t o = red[base + w];
    v = o > v ? o : v;
  }
  parity ^= 1u;
  return v;
}

template <int K, class Ctx>
OT_HD void score_rows_f32(Ctx& ctx, const ScoreArgs& a) {
  const std::size_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const unsigned warps = static_cast<unsigned>(stride) / kWarpSize;
  const int vocab = a.vocab, k = a.k;
  const float* x = a.logits + row * static_cast<std::size_t>(vocab);
  const auto red = shared_array<std::uint64_t>(ctx);
  const auto sums = shared_array<double>(ctx, score_sum_offset());
  const auto ids = shared_array<std::int32_t>(ctx, score_ids_offset());

  // Pass 1: this thread's K best.
  std::uint64_t top[K];
  OT_SCORE_UNROLL
  for (int s = 0; s < K; ++s) top[s] = 0;
  for (int i = tid; i < vocab; i += stride) {
    const std::uint64_t r = sample_rank(sample_key(x[i]), i);
    if (r > top[K - 1]) score_insert(top, r);
  }

  // The k first, one per round; round 0's is the row's max (NaN counted as -inf).
  unsigned parity = 0;
  float mx = -INFINITY;
  const int rounds = k > 1 ? k : 1;
  for (int j = 0; j < rounds; ++j) {
    const std::uint64_t best = score_block_max(ctx, top[0], red, parity);
    const int id = score_id(best);
    if (j == 0) mx = sample_key(x[id]);
    if (j < k) {
      if (tid == 0) ids[j] = id;
      if (top[0] == best) {  // this thread's head won: pop it
        OT_SCORE_UNROLL
        for (int s = 0; s + 1 < K; ++s) top[s] = top[s + 1];
        top[K - 1] = 0;
      }
    }
  }

  // Pass 2: the temperature-1 log-sum-exp as row_stats computes it.
  double z = 0.0;
  for (int i = tid; i < vocab; i += stride) z += ::exp(static_cast<double>(x[i] - mx));
  OT_SCORE_UNROLL
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) z += ctx.shfl_xor_sync(kFullMask, z, offset);
  if (ctx.lane() == 0) sums[ctx.warp()] = z;
  ctx.sync();  // also orders thread 0's ids before the reads below
  z = sums[0];
  for (unsigned w = 1; w < warps; ++w) z += sums[w];
  const double lse = static_cast<double>(static_cast<float>(static_cast<double>(mx) + ::log(z)));

  if (tid == 0) a.logprobs[row] = static_cast<double>(x[a.targets[row]]) - lse;
  for (int j = tid; j < k; j += stride) {
    const int id = ids[j];
    const std::size_t at = row * static_cast<std::size_t>(k) + static_cast<std::size_t>(j);
    a.top_ids[at] = id;
    a.top_logprobs[at] = static_cast<double>(x[id]) - lse;
  }
}

// Calls f(std::integral_constant<int, K>{}) with K = score_local_k(k) (k ≤ kScoreMaxK):
// the launcher and the tests pick the same instantiation.
template <class F>
void score_with_local_k(int k, F&& f) {
  switch (score_local_k(k)) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    case 8:
      f(std::integral_constant<int, 8>{});
      break;
    case 16:
      f(std::integral_constant<int, 16>{});
      break;
    default:
      f(std::integral_constant<int, 32>{});
      break;
  }
  static_assert(kScoreMaxK == 32, "one case per power of two up to kScoreMaxK");
}

}  // namespace ot_cuda::kernels

#undef OT_SCORE_UNROLL
