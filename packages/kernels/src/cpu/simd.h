// Small SIMD helpers shared by the kernels: 8-wide fp32 on AVX2/FMA, with a
// portable fallback so the addon builds on any C++17 compiler. On x86-64 the
// addon is compiled for AVX2+FMA (binding.gyp), the baseline it requires; code
// for wider instruction sets is marked OT_TARGET_AVX512 and runs only when
// isa.h's active_isa() says so.
#pragma once

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define OT_AVX2 1
// A function compiled for AVX-512 (F, BW, DQ, VL) inside a baseline build. Keep
// such functions internal (anonymous namespace): an inline function with external
// linkage compiled here could be merged with, and replace, its baseline copy.
#define OT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#endif

namespace ot {

#ifdef OT_AVX2
/** The sum of the 8 lanes of v. */
inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/** The largest of the 8 lanes of v. */
inline float hmax256(__m256 v) {
  __m128 r = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  r = _mm_max_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

/** All-ones in the first n (0..8) lanes: the mask of a loop's tail. */
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/** Lane j = the sum of the 8 lanes of acc[j], for j in 0..8. */
inline __m256 hsum8(const __m256* acc) {
  const __m256 t0123 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
  const __m256 t4567 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0123, t4567, 0x20), _mm256_permute2f128_ps(t0123, t4567, 0x31));
}

/**
 * Lane j = x · row(j) over d elements, for j in 0..8: eight dot products sharing
 * every load of x (row(j) returns the j-th row's pointer; the tail is masked).
 */
template <typename Row>
inline __m256 dot8_lanes(const float* x, Row row, int64_t d) {
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(row(j) + i), xv, acc[j]);
  }
  if (i < d) {
    const __m256i mask = lane_mask(d - i);
    const __m256 xv = _mm256_maskload_ps(x + i, mask);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_maskload_ps(row(j) + i, mask), xv, acc[j]);
  }
  return hsum8(acc);
}

/**
 * e^x of 8 floats already clamped to about [-88.4, 88.4]: Cephes range reduction
 * x = k·ln2 + r (|r| ≤ ln2 / 2, ln2 split in two for an exact k·ln2), a degree-5
 * polynomial (≤ 2 ulp), then · 2^k through the exponent bits.
 */
inline __m256 exp256_clamped(__m256 x) {
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

/**
 * exp of 8 floats for the norms, activations and losses. Inputs are clamped to
 * [-87, 88]: very negative inputs give 1.6e-38 instead of 0, large ones 1.7e38
 * instead of +inf. NaN stays NaN.
 */
inline __m256 exp256(__m256 x) {
  const __m256 nan_mask = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  return _mm256_or_ps(exp256_clamped(x), nan_mask);  // NaN in, NaN out
}

/** exp of 8 floats for the softmax of attention: 0 below -87.3, so e^-inf is exactly 0. */
inline __m256 exp256_flush(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f));
  return _mm256_andnot_ps(underflow, exp256_clamped(x));
}

/** σ(x) = 1 / (1 + e^−x) of 8 floats. */
inline __m256 sigmoid256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
#endif

/** dot(a, b) over n elements, accumulated in fp32. */
inline float dot(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef OT_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  sum = hsum256(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

/** y[0..n) += alpha · x[0..n). */
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#ifdef OT_AVX2
  __m256 va = _mm256_set1_ps(alpha);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
  for (; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace ot
