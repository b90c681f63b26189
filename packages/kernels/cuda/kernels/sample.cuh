// Fused token sampling over rows of logits, written once: nvcc compiles it in
// sample.cu, the tests run it in the CPU execution (test/test_sample.cpp)
// against the CPU backend's own draw code (../../src/cpu/sample.cc).
//
// One block per draw (grid.x = draws). Draw d reads logits row row_of[d] with
// its temperature, top-k, top-p, min-p and uniform u in [0, 1), and writes the
// token and its log-probability at temperature 1 (logit − lse, the lse rounded
// to f32), with sample.cc's semantics:
//   - temperature 0, or a row without a finite maximum → argmax (ties to the
//     lower id; NaN is never the maximum);
//   - no filter (top-k ≤ 0 or ≥ vocab, top-p 1, min-p 0) → inverse CDF of
//     softmax(logits / T) in vocabulary order, -inf never drawn;
//   - else the candidates in order of logit (descending, ties to the lower id,
//     NaN as -inf) are cut to the k first, then to those with probability ≥
//     min-p · the largest (the maximum always kept), then to the shortest
//     prefix whose mass reaches top-p · (the mass of the k first), then to
//     those with non-zero weight; u picks one by inverse CDF over that prefix
//     in that order.
// No sort: every cut is a prefix of the order, so each is a threshold on the
// 64-bit rank R(i) = (ordered bits of the logit) << 32 | (2³² − 1 − i), whose
// descending order is the candidates' order. A threshold is found by a binary
// search (32 steps on the logit's bits, then ⌈log2 vocab⌉ on the id among
// ties), each step one block-wide sum of a count or a mass over the row.
// Masses are f64 as in sample.cc; they are summed in another order, so a draw
// can differ from the CPU backend's only when u lands within rounding of a
// boundary between two tokens.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../include/ot_cuda/ctx.h"

namespace ot_cuda::kernels {

inline constexpr int kSampleMaxWarps = 8;

OT_HD constexpr int sample_block_threads(int vocab) {
  const int warps = (vocab + 8 * kWarpSize - 1) / (8 * kWarpSize);  // ≥ 8 tokens a thread
  return (warps < 1 ? 1 : warps > kSampleMaxWarps ? kSampleMaxWarps : warps) * kWarpSize;
}
// Doubles: the reductions' scratch (2 parities × 2 values × kSampleMaxWarps),
// then one per thread for the unfiltered draw's scan.
OT_HD constexpr std::size_t sample_shared_bytes(int threads) {
  return (4 * static_cast<std::size_t>(kSampleMaxWarps) + static_cast<std::size_t>(threads)) * sizeof(double);
}

struct SampleArgs {
  const float* logits;
  int vocab;
  const std::int32_t* row_of;
  const double* temperatures;
  const std::int32_t* top_k;
  const double* top_p;
  const double* min_p;
  const double* uniforms;
  std::int32_t* tokens;
  double* logprobs;
};

// A logit as a candidate's key: NaN orders as -inf, and -0 as 0 (they compare equal).
OT_HD OT_FORCEINLINE float sample_key(float l) { return l != l ? -INFINITY : l == 0.0f ? 0.0f : l; }

// The candidates' order as an integer: larger R first.
OT_HD OT_FORCEINLINE std::uint64_t sample_rank(float key, int i) {
  std::uint32_t u;
#if defined(__CUDA_ARCH__)
  u = __float_as_uint(key);
#else
  std::memcpy(&u, &key, sizeof u);
#endif
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<std::uint64_t>(u) << 32) | (0xffffffffu - static_cast<std::uint32_t>(i));
}

struct SampleSum {
  OT_HD OT_FORCEINLINE void operator()(double& a, double& b, double a2, double b2) const {
    a += a2;
    b += b2;
  }
};
// (value, id): the larger value, ties to the lower id.
struct SampleArgmax {
  OT_HD OT_FORCEINLINE void operator()(double& a, double& b, double a2, double b2) const {
    if (a2 > a || (a2 == a && b2 < b)) {
      a = a2;
      b = b2;
    }
  }
};
// (min, max).
struct SampleMinMax {
  OT_HD OT_FORCEINLINE void operator()(double& a, double& b, double a2, double b2) const {
    a = a2 < a ? a2 : a;
    b = b2 > b ? b2 : b;
  }
};

// Reduces (a, b) over the block with op (commutative, associative, and giving
// bit-identical results whichever lane computes it), every thread receiving
// the result. Alternates between two halves of the scratch (parity), so that
// consecutive reductions need one barrier each.
template <class Ctx, class Red, class Op>
OT_HD OT_FORCEINLINE void sample_reduce(Ctx& ctx, double& a, double& b, const Red& red, unsigned& parity, Op op) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const double a2 = ctx.shfl_xor_sync(kFullMask, a, offset), b2 = ctx.shfl_xor_sync(kFullMask, b, offset);
    op(a, b, a2, b2);
  }
  const unsigned warps = ctx.block_dim().x / kWarpSize, base = parity * 2 * kSampleMaxWarps;
  if (ctx.lane() == 0) {
    red[base + ctx.warp()] = a;
    red[base + kSampleMaxWarps + ctx.warp()] = b;
  }
  ctx.sync();
  a = red[base];
  b = red[base + kSampleMaxWarps];
  for (unsigned w = 1; w < warps; ++w) op(a, b, static_cast<double>(red[base + w]),
                                          static_cast<double>(red[base + kSampleMaxWarps + w]));
  parity ^= 1u;
}

// Block-wide sum of one double (the second slot carries zeros).
template <class Ctx, class Red>
OT_HD OT_FORCEINLINE double sample_sum(Ctx& ctx, double v, const Red& red, unsigned& parity) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  const unsigned warps = ctx.block_dim().x / kWarpSize, base = parity * 2 * kSampleMaxWarps;
  if (ctx.lane() == 0) red[base + ctx.warp()] = v;
  ctx.sync();
  v = red[base];
  for (unsigned w = 1; w < warps; ++w) v += red[base + w];
  parity ^= 1u;
  return v;
}

// The filtered draw's candidate sets, each a prefix of the order: level 0 every
// token, 1 the top-k and min-p survivors, 2 those within the top-p prefix with
// non-zero weight.
struct SampleFilter {
  float max;
  double inv, scaled_max, log_min_p;
  bool min_p;
  std::uint64_t t_k, t_p;

  OT_HD OT_FORCEINLINE double weight(float key) const {
    return key == -INFINITY ? 0.0 : ::exp(static_cast<double>(key) * inv - scaled_max);
  }
  // Whether the token is in the set of that level; its weight in *w when asked
  // for (or needed).
  OT_HD OT_FORCEINLINE bool in(int level, float key, std::uint64_t r, bool want_w, double* w) const {
    if (level >= 1) {
      if (r < t_k) return false;
      if (min_p && !(key >= max || (key != -INFINITY && static_cast<double>(key) * inv - scaled_max >= log_min_p))) {
        return false;
      }
    }
    if (level >= 2 && r < t_p) return false;
    if (level >= 2 || want_w) *w = weight(key);
    return level < 2 || *w > 0.0;
  }
};

// The largest t with Σ_{i in set, R(i) ≥ t} measure(i) > x (strict) or ≥ x,
// where measure is the weight or 1. The caller ensures it holds for t = 0 and
// x > 0. Uniform: every thread gets the same t.
template <class Ctx, class Red>
OT_HD OT_FORCEINLINE std::uint64_t sample_search(Ctx& ctx, const float* x, int vocab, const SampleFilter& f, int level,
                                  bool by_weight, double target, bool strict, const Red& red, unsigned& parity) {
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const auto holds = [&](std::uint64_t t) {
    double local = 0.0;
    for (int i = tid; i < vocab; i += stride) {
      const float key = sample_key(x[i]);
      const std::uint64_t r = sample_rank(key, i);
      double w = 1.0;
      if (r >= t && f.in(level, key, r, by_weight, &w)) local += by_weight ? w : 1.0;
    }
    const double total = sample_sum(ctx, local, red, parity);
    return strict ? total > target : total >= target;
  };
  // The logit's bits: holds(lo << 32), not holds(hi << 32).
  std::uint64_t lo = 0, hi = std::uint64_t{1} << 32;
  while (hi - lo > 1) {
    const std::uint64_t mid = (lo + hi) / 2;
    if (holds(mid << 32)) lo = mid;
    else hi = mid;
  }
  // The id among that logit's ties: holds at id jhi, not at jlo (-1: none of them).
  std::int64_t jlo = -1, jhi = vocab - 1;
  while (jhi - jlo > 1) {
    const std::int64_t mid = (jlo + jhi) / 2;
    if (holds((lo << 32) | (0xffffffffu - static_cast<std::uint32_t>(mid)))) jhi = mid;
    else jlo = mid;
  }
  return (lo << 32) | (0xffffffffu - static_cast<std::uint32_t>(jhi));
}

template <class Ctx>
OT_HD void sample_f32(Ctx& ctx, const SampleArgs& a) {
  const unsigned draw = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const int vocab = a.vocab;
  const float* x = a.logits + static_cast<std::size_t>(a.row_of[draw]) * static_cast<std::size_t>(vocab);
  const auto red = shared_array<double>(ctx);
  unsigned parity = 0;

  // The row's max and argmax (first occurrence), and Σ exp(logit − max) with
  // the difference in f32 (sample.cc's row_stats).
  double best = -INFINITY, best_id = vocab;
  for (int i = tid; i < vocab; i += stride) {
    const double v = sample_key(x[i]);
    if (v > best || best_id == vocab) {  // the first token seen, even -inf
      best = v;
      best_id = i;
    }
  }
  sample_reduce(ctx, best, best_id, red, parity, SampleArgmax{});
  const float mx = static_cast<float>(best);
  const int argmax = static_cast<int>(best_id);
  double z1 = 0.0;
  for (int i = tid; i < vocab; i += stride) z1 += ::exp(static_cast<double>(x[i] - mx));
  z1 = sample_sum(ctx, z1, red, parity);
  const float lse1 = static_cast<float>(static_cast<double>(mx) + ::log(z1));

  const double temperature = a.temperatures[draw], u = a.uniforms[draw], top_p = a.top_p[draw];
  const double min_p = a.min_p[draw];
  const int top_k = a.top_k[draw];
  int token = argmax;
  if (temperature != 0.0 && mx != INFINITY && mx != -INFINITY) {
    const double inv = 1.0 / temperature, scaled_max = static_cast<double>(mx) * inv;
    if (!(top_k > 0 || top_p < 1.0 || min_p > 0.0)) {
      // Inverse CDF in vocabulary order: each thread a contiguous chunk, the
      // chunks' masses scanned in order, then the chunk where u·z falls walked.
      double z = z1;
      if (temperature != 1.0) {
        z = 0.0;
        for (int i = tid; i < vocab; i += stride) z += ::exp(static_cast<double>(x[i]) * inv - scaled_max);
        z = sample_sum(ctx, z, red, parity);
      }
      const int chunk = (vocab + stride - 1) / stride;
      const int begin = tid * chunk < vocab ? tid * chunk : vocab, end = begin + chunk < vocab ? begin + chunk : vocab;
      double mass = 0.0;
      for (int i = begin; i < end; ++i) mass += ::exp(static_cast<double>(x[i]) * inv - scaled_max);
      const auto scan = shared_array<double>(ctx, 4 * kSampleMaxWarps * sizeof(double));
      scan[tid] = mass;
      ctx.sync();
      double left = u * z;
      for (int t = 0; t < tid; ++t) left -= scan[t];
      double found = vocab, last = -1;  // the first token where the mass passes u·z; the last with any
      for (int i = begin; i < end; ++i) {
        const double w = ::exp(static_cast<double>(x[i]) * inv - scaled_max);
        if (w == 0.0) continue;
        last = i;
        left -= w;
        if (left < 0.0 && found == vocab) found = i;
      }
      sample_reduce(ctx, found, last, red, parity, SampleMinMax{});
      token = found < vocab ? static_cast<int>(found) : static_cast<int>(last);
    } else {
      SampleFilter f{mx, inv, scaled_max, min_p > 0.0 ? ::log(min_p) : 0.0, min_p > 0.0, 0, 0};
      // Top-k: the k-th candidate's rank.
      if (top_k > 0 && top_k < vocab) {
        f.t_k = sample_search(ctx, x, vocab, f, 0, false, static_cast<double>(top_k), false, red, parity);
      }
      // The top-p normaliser: the mass of the k first (before min-p).
      double z = 0.0, kept = 0.0;
      for (int i = tid; i < vocab; i += stride) {
        const float key = sample_key(x[i]);
        const std::uint64_t r = sample_rank(key, i);
        if (r >= f.t_k) {
          const double w = f.weight(key);
          z += w;
          double w1 = 0.0;
          if (f.in(1, key, r, true, &w1)) kept += w1;
        }
      }
      sample_reduce(ctx, z, kept, red, parity, SampleSum{});
      const double nucleus = top_p * z;
      // Top-p: the shortest prefix of the survivors reaching the nucleus (all of them if they do not).
      if (top_p < 1.0 && kept >= nucleus) {
        f.t_p = sample_search(ctx, x, vocab, f, 1, true, nucleus, false, red, parity);
      }
      // The kept prefix's mass and size, then u picks by inverse CDF in order.
      double mass = 0.0, count = 0.0;
      for (int i = tid; i < vocab; i += stride) {
        const float key = sample_key(x[i]);
        double w = 0.0;
        if (f.in(2, key, sample_rank(key, i), true, &w)) {
          mass += w;
          count += 1.0;
        }
      }
      sample_reduce(ctx, mass, count, red, parity, SampleSum{});
      const double target = u * mass;
      // (If rounding put u·mass at the whole mass, the last of the prefix: the first count of them.)
      const bool within = target < mass;
      const std::uint64_t t =
          sample_search(ctx, x, vocab, f, 2, within, within ? target : count, within, red, parity);
      token = static_cast<int>(0xffffffffu - static_cast<std::uint32_t>(t));
    }
  }
  if (tid == 0) {
    a.tokens[draw] = token;
    a.logprobs[draw] = static_cast<double>(x[token]) - static_cast<double>(lse1);
  }
}

}  // namespace ot_cuda::kernels
