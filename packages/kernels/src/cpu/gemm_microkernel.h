// The packed GEMM's register tile (GotoBLAS layout), for gemm_packed.cc: an
// [MR × NR] tile of C accumulates in registers over a k-major panel of packed A
// (MR rows) and one of packed B (NR columns). The tile size follows the SIMD
// width the addon is compiled for: 12×32 on AVX-512, 6×16 on AVX2 and scalar.
#pragma once

#include <cstdint>

#include "simd.h"

namespace ot {
namespace gemm_tile {

#if defined(__AVX512F__)
#define OT_GEMM_AVX512 1
constexpr int MR = 12;
constexpr int NR = 32;
#else
constexpr int MR = 6;
constexpr int NR = 16;
#endif

#ifdef OT_GEMM_AVX512
/**
 * C[MR][NR] (+)= Σ_p ap[p][·] ⊗ bp[p][·] straight into a full tile of C: 24 zmm
 * accumulators, two B loads and twelve broadcasts per k step.
 */
inline void micro_kernel_full(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, bool overwrite) {
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp);
    const __m512 b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
    ap += MR;
    bp += NR;
  }
  for (int r = 0; r < MR; ++r) {
    float* row = c + r * ldc;
    if (overwrite) {
      _mm512_storeu_ps(row, acc[r][0]);
      _mm512_storeu_ps(row + 16, acc[r][1]);
    } else {
      _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), acc[r][0]));
      _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_loadu_ps(row + 16), acc[r][1]));
    }
  }
}
#endif

/** acc[MR][NR] = Σ_p ap[p][·] ⊗ bp[p][·]. */
inline void micro_kernel(int64_t kc, const float* ap, const float* bp, float* acc) {
#ifdef OT_GEMM_AVX512
  micro_kernel_full(kc, ap, bp, acc, NR, true);
#elif defined(OT_AVX2)
  // 12 accumulators, two B loads and one broadcast: 15 of the 16 ymm registers.
  __m256 acc0[MR], acc1[MR];
  for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp);
    const __m256 b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
      acc0[r] = _mm256_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(a, b1, acc1[r]);
    }
    ap += MR;
    bp += NR;
  }
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(acc + r * NR, acc0[r]);
    _mm256_storeu_ps(acc + r * NR + 8, acc1[r]);
  }
#else
  for (int i = 0; i < MR * NR; ++i) acc[i] = 0.0f;
  for (int64_t p = 0; p < kc; ++p) {
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) acc[r * NR + c] += ap[r] * bp[c];
    }
    ap += MR;
    bp += NR;
  }
#endif
}

/** C tile += acc (or C = beta·C + acc on the first k block), clipped to rows × cols. */
inline void store_tile(const float* acc, float* c, int64_t ldc, int rows, int cols, bool first, float beta) {
  for (int r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    const float* src = acc + r * NR;
    if (!first || beta == 1.0f) {
      int col = 0;
#ifdef OT_AVX2
      for (; col + 8 <= cols; col += 8) {
        _mm256_storeu_ps(row + col, _mm256_add_ps(_mm256_loadu_ps(row + col), _mm256_loadu_ps(src + col)));
      }
#endif
      for (; col < cols; ++col) row[col] += src[col];
    } else if (beta == 0.0f) {
      for (int col = 0; col < cols; ++col) row[col] = src[col];
    } else {
      for (int col = 0; col < cols; ++col) row[col] = beta * row[col] + src[col];
    }
  }
}

}  // namespace gemm_tile
}  // namespace ot
