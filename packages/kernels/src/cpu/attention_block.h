// Block products for the training attention's backward: small dense products
// over packed, 8-padded blocks (a key block's K/V, a run of query rows), in the
// register-tiled broadcast form C[m, :] (+)= Σ_k A(m, k) · B[k, :], and the
// masked softmax gradient of one block of scores. Each C element is one fma
// chain over k in order, so the results do not depend on the tiling.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention_math.h"
#include "simd.h"

namespace ot {
namespace attn {

/** A strided operand: element (m, k) of A at a[m·am + k·ak]; row k of B at b + k·bk; row m of C at c + m·cm. */
struct BlockProduct {
  int64_t m, k, n;  // n: a multiple of 8
  const float* a;
  int64_t am, ak;
  const float* b;
  int64_t bk;
  float* c;
  int64_t cm;
  bool overwrite;  // C = A·B instead of C += A·B
};

#ifdef OT_AVX2
/** MT rows × NV vectors of C over all of k. */
template <int MT, int NV>
inline void block_tile(const BlockProduct& p, int64_t m0, int64_t n0) {
  __m256 acc[MT][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MT; ++i) {
    const float* c = p.c + (m0 + i) * p.cm + n0;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = p.overwrite ? _mm256_setzero_ps() : _mm256_loadu_ps(c + 8 * v);
  }
  const float* a = p.a + m0 * p.am;
  const float* b = p.b + n0;
  const int64_t am = p.am, ak = p.ak, bk = p.bk, k = p.k;  // locals: the stores below could alias p
  for (int64_t kk = 0; kk < k; ++kk) {
    __m256 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MT; ++i) {
      const __m256 av = _mm256_broadcast_ss(a + i * am);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
    }
    a += ak;
    b += bk;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MT; ++i) {
    float* c = p.c + (m0 + i) * p.cm + n0;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c + 8 * v, acc[i][v]);
  }
}

/** Rows [0, m) in tiles of MT, the rest in one or two smaller tiles. */
template <int NV, int MT>
inline void block_rows(const BlockProduct& p, int64_t n0) {
  int64_t full = p.m / MT, rest = p.m % MT;
  // MT + 1 rows as two tiles rather than a full one and a 1-row one, which would
  // use each load of B only once.
  const bool split = rest == 1 && full > 0;
  if (split) --full;
  int64_t m0 = 0;
  for (int64_t t = 0; t < full; ++t, m0 += MT) block_tile<MT, NV>(p, m0, n0);
  if (split) {
    block_tile<(MT + 1) / 2, NV>(p, m0, n0);
    m0 += (MT + 1) / 2;
    rest = MT + 1 - (MT + 1) / 2;
  }
  switch (rest) {
    case 5: if constexpr (MT > 5) block_tile<5, NV>(p, m0, n0); break;
    case 4: if constexpr (MT > 4) block_tile<4, NV>(p, m0, n0); break;
    case 3: block_tile<3, NV>(p, m0, n0); break;
    case 2: block_tile<2, NV>(p, m0, n0); break;
    case 1: block_tile<1, NV>(p, m0, n0); break;
    default: break;
  }
}
#endif

/** C (+)= A·B over the whole block. */
inline void block_product(const BlockProduct& p) {
#ifdef OT_AVX2
  int64_t n0 = 0;
  for (; n0 + 32 <= p.n; n0 += 32) block_rows<4, 3>(p, n0);
  switch ((p.n - n0) / 8) {
    case 3: block_rows<3, 4>(p, n0); break;
    case 2: block_rows<2, 6>(p, n0); break;
    case 1: block_rows<1, 6>(p, n0); break;
    default: break;
  }
#else
  for (int64_t i = 0; i < p.m; ++i) {
    float* c = p.c + i * p.cm;
    for (int64_t j = 0; j < p.n; ++j) {
      float s = p.overwrite ? 0.0f : c[j];
      for (int64_t kk = 0; kk < p.k; ++kk) s = std::fma(p.a[i * p.am + kk * p.ak], p.b[kk * p.bk + j], s);
      c[j] = s;
    }
  }
#endif
}

/**
 * One row of a block of scores against `width` keys (a multiple of 8), of which
 * the first `limit` count (causal, and inside the sequence):
 *   p = e^(scale·s − lse),  ds = scale · p · (dp − delta),  both 0 past limit.
 * p overwrites s and ds overwrites dp; ds carries the score scale for dq and dk.
 */
inline void block_softmax_grad(float* s, float* dp, int width, int limit, float lse, float delta, float scale) {
#ifdef OT_AVX2
  const __m256 sc = _mm256_set1_ps(scale), l = _mm256_set1_ps(lse), dl = _mm256_set1_ps(delta);
  for (int t = 0; t < width; t += 8) {
    __m256 p = exp256_flush(_mm256_fmsub_ps(sc, _mm256_loadu_ps(s + t), l));
    if (t + 8 > limit) p = _mm256_and_ps(p, _mm256_castsi256_ps(lane_mask(std::max(0, limit - t))));
    _mm256_storeu_ps(s + t, p);
    const __m256 dp_minus_delta = _mm256_sub_ps(_mm256_loadu_ps(dp + t), dl);
    _mm256_storeu_ps(dp + t, _mm256_mul_ps(_mm256_mul_ps(sc, p), dp_minus_delta));
  }
#else
  for (int t = 0; t < width; ++t) {
    s[t] = t < limit ? std::exp(scale * s[t] - lse) : 0.0f;
    dp[t] = scale * s[t] * (dp[t] - delta);
  }
#endif
}

}  // namespace attn
}  // namespace ot
