// The vector math of attention over one tile of key positions (the online
// softmax forward), shared by the serving and the training attention. Tiles
// are padded to a multiple of 8 positions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "simd.h"

namespace ot {
namespace attn {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/** out[j] = x · ys[j] over d elements, for j in 0..8. */
inline void dot8(const float* x, const float* const* ys, int64_t d, float* out) {
#ifdef OT_AVX2
  _mm256_storeu_ps(out, dot8_lanes(x, [ys](int j) { return ys[j]; }, d));
#else
  for (int j = 0; j < 8; ++j) out[j] = dot(x, ys[j], d);
#endif
}

/** acc[0..d) = corr · acc + Σ_{t<n} w[t] · rows[t][0..d); the accumulator stays in registers. */
inline void accumulate(const float* w, const float* const* rows, int n, int64_t d, float corr, float* acc) {
#ifdef OT_AVX2
  const __m256 c = _mm256_set1_ps(corr);
  int64_t i = 0;
  // 64 columns at a time: eight independent FMA chains hide the FMA latency.
  for (; i + 64 <= d; i += 64) {
    __m256 a[8];
    for (int u = 0; u < 8; ++u) a[u] = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 8 * u));
    for (int t = 0; t < n; ++t) {
      const __m256 wt = _mm256_broadcast_ss(w + t);
      const float* r = rows[t] + i;
      for (int u = 0; u < 8; ++u) a[u] = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 8 * u), a[u]);
    }
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(acc + i + 8 * u, a[u]);
  }
  for (; i + 32 <= d; i += 32) {
    __m256 a0 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i));
    __m256 a1 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 8));
    __m256 a2 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 16));
    __m256 a3 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 24));
    for (int t = 0; t < n; ++t) {
      const __m256 wt = _mm256_broadcast_ss(w + t);
      const float* r = rows[t] + i;
      a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r), a0);
      a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 8), a1);
      a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 16), a2);
      a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 24), a3);
    }
    _mm256_storeu_ps(acc + i, a0);
    _mm256_storeu_ps(acc + i + 8, a1);
    _mm256_storeu_ps(acc + i + 16, a2);
    _mm256_storeu_ps(acc + i + 24, a3);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 a = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i));
    for (int t = 0; t < n; ++t) a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_loadu_ps(rows[t] + i), a);
    _mm256_storeu_ps(acc + i, a);
  }
  if (i < d) {
    const __m256i mask = lane_mask(d - i);
    __m256 a = _mm256_mul_ps(c, _mm256_maskload_ps(acc + i, mask));
    for (int t = 0; t < n; ++t) {
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_maskload_ps(rows[t] + i, mask), a);
    }
    _mm256_maskstore_ps(acc + i, mask, a);
  }
#else
  for (int64_t i = 0; i < d; ++i) acc[i] *= corr;
  for (int t = 0; t < n; ++t) axpy(w[t], rows[t], acc, d);
#endif
}

/** The weighted rows one head adds in a tile: acc = corr · acc + Σ_{t<n} w[t] · rows[t]. */
struct HeadSum {
  const float* w;
  int n;
  float corr;
  float* acc;
};

#ifdef OT_AVX2
/**
 * Heads a and b over the columns [i, i + 8·C): the value rows' loads are shared,
 * and 2·C independent FMA chains run where one head alone had C. Each
 * (head, column) element sums its terms in the same order as accumulate.
 */
template <int C>
inline void accumulate_pair(const HeadSum& a, const HeadSum& b, const float* const* rows, int64_t i) {
  __m256 x[C], y[C];
  const __m256 ca = _mm256_set1_ps(a.corr), cb = _mm256_set1_ps(b.corr);
  for (int u = 0; u < C; ++u) {
    x[u] = _mm256_mul_ps(ca, _mm256_loadu_ps(a.acc + i + 8 * u));
    y[u] = _mm256_mul_ps(cb, _mm256_loadu_ps(b.acc + i + 8 * u));
  }
  const int both = std::min(a.n, b.n);
  int t = 0;
  for (; t < both; ++t) {
    const __m256 wa = _mm256_broadcast_ss(a.w + t), wb = _mm256_broadcast_ss(b.w + t);
    for (int u = 0; u < C; ++u) {
      const __m256 r = _mm256_loadu_ps(rows[t] + i + 8 * u);
      x[u] = _mm256_fmadd_ps(wa, r, x[u]);
      y[u] = _mm256_fmadd_ps(wb, r, y[u]);
    }
  }
  for (int s = t; s < a.n; ++s) {
    const __m256 wa = _mm256_broadcast_ss(a.w + s);
    for (int u = 0; u < C; ++u) x[u] = _mm256_fmadd_ps(wa, _mm256_loadu_ps(rows[s] + i + 8 * u), x[u]);
  }
  for (int s = t; s < b.n; ++s) {
    const __m256 wb = _mm256_broadcast_ss(b.w + s);
    for (int u = 0; u < C; ++u) y[u] = _mm256_fmadd_ps(wb, _mm256_loadu_ps(rows[s] + i + 8 * u), y[u]);
  }
  for (int u = 0; u < C; ++u) {
    _mm256_storeu_ps(a.acc + i + 8 * u, x[u]);
    _mm256_storeu_ps(b.acc + i + 8 * u, y[u]);
  }
}
#endif

/**
 * accumulate for several heads reading the same value rows (a kv head's query
 * heads, of one or more query rows): the same sums, bit for bit, with the rows'
 * loads shared by pairs of heads.
 */
inline void accumulate_heads(const HeadSum* heads, int64_t count, const float* const* rows, int64_t d) {
  int64_t h = 0;
#ifdef OT_AVX2
  for (; h + 2 <= count && d % 8 == 0; h += 2) {
    int64_t i = 0;
    for (; i + 32 <= d; i += 32) accumulate_pair<4>(heads[h], heads[h + 1], rows, i);
    for (; i < d; i += 8) accumulate_pair<1>(heads[h], heads[h + 1], rows, i);
  }
#endif
  for (; h < count; ++h) accumulate(heads[h].w, rows, heads[h].n, d, heads[h].corr, heads[h].acc);
}

/** s[0..n) *= scale and s[n..padded) = -inf; returns max(s[0..n)). */
inline float scale_scores(float* s, int n, int padded, float scale) {
#ifdef OT_AVX2
  const __m256 sc = _mm256_set1_ps(scale), neg_inf = _mm256_set1_ps(kNegInf);
  __m256 mx = neg_inf;
  for (int t = 0; t < padded; t += 8) {
    __m256 x = _mm256_mul_ps(sc, _mm256_loadu_ps(s + t));
    if (t + 8 > n) x = _mm256_blendv_ps(neg_inf, x, _mm256_castsi256_ps(lane_mask(n - t)));
    _mm256_storeu_ps(s + t, x);
    mx = _mm256_max_ps(mx, x);
  }
  return hmax256(mx);
#else
  float max = kNegInf;
  for (int t = 0; t < n; ++t) {
    s[t] *= scale;
    max = std::max(max, s[t]);
  }
  for (int t = n; t < padded; ++t) s[t] = kNegInf;
  return max;
#endif
}

/** s[t] = e^(s[t] - shift) for t < padded (a multiple of 8); returns the sum. */
inline float exp_shifted(float* s, int padded, float shift) {
#ifdef OT_AVX2
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  for (int t = 0; t < padded; t += 8) {
    const __m256 e = exp256_flush(_mm256_sub_ps(_mm256_loadu_ps(s + t), sh));
    _mm256_storeu_ps(s + t, e);
    sum = _mm256_add_ps(sum, e);
  }
  return hsum256(sum);
#else
  float sum = 0.0f;
  for (int t = 0; t < padded; ++t) {
    s[t] = std::exp(s[t] - shift);
    sum += s[t];
  }
  return sum;
#endif
}

}  // namespace attn
}  // namespace ot
