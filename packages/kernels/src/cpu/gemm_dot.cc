// x·Wᵀ by dot tiles (B stored [n, k], no packing): the decode-sized products of the
// op as built ("auto"), where packing B would cost more than the product.
#include <cmath>

#include "gemm.h"
#include "gemm_parts.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

/**
 * A tile of MI rows of A × NJ rows of B (B stored [n, k]): MI·NJ dot products
 * over k, sharing every load. Used for small m, where packing B would cost more
 * than the product (decode and short prefill chunks).
 */
template <int MI, int NJ>
void dot_tile(const GemmArgs& g, int64_t i0, int64_t j0) {
  const float* a[MI];
  const float* b[NJ];
  for (int i = 0; i < MI; ++i) a[i] = g.a + (i0 + i) * g.lda;
  for (int j = 0; j < NJ; ++j) b[j] = g.b + (j0 + j) * g.ldb;
  float sums[MI][NJ];
  int64_t p = 0;
#ifdef OT_AVX2
  __m256 acc[MI][NJ];
  for (int i = 0; i < MI; ++i)
    for (int j = 0; j < NJ; ++j) acc[i][j] = _mm256_setzero_ps();
  for (; p + 8 <= g.k; p += 8) {
    __m256 bv[NJ];
    for (int j = 0; j < NJ; ++j) bv[j] = _mm256_loadu_ps(b[j] + p);
    for (int i = 0; i < MI; ++i) {
      const __m256 av = _mm256_loadu_ps(a[i] + p);
      for (int j = 0; j < NJ; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MI; ++i)
    for (int j = 0; j < NJ; ++j) sums[i][j] = hsum256(acc[i][j]);
#else
  for (int i = 0; i < MI; ++i)
    for (int j = 0; j < NJ; ++j) sums[i][j] = 0.0f;
#endif
  // An explicit fma: left to itself, the compiler contracts (or vectorises) this
  // loop differently per tile size, and a row's sum would depend on its tile.
  for (; p < g.k; ++p) {
    for (int i = 0; i < MI; ++i)
      for (int j = 0; j < NJ; ++j) sums[i][j] = std::fma(a[i][p], b[j][p], sums[i][j]);
  }
  for (int i = 0; i < MI; ++i) {
    float* c = g.c + (i0 + i) * g.ldc + j0;
    for (int j = 0; j < NJ; ++j) c[j] = g.alpha * sums[i][j] + (g.beta == 0.0f ? 0.0f : g.beta * c[j]);
  }
}

/** Rows [i0, i1) of C at columns j0 … j0+NJ-1. Every tile size sums a dot product in the same order. */
template <int NJ>
void dot_rows(const GemmArgs& g, int64_t j0, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) dot_tile<4, NJ>(g, i, j0);
  for (; i + 2 <= i1; i += 2) dot_tile<2, NJ>(g, i, j0);
  for (; i < i1; ++i) dot_tile<1, NJ>(g, i, j0);
}

}  // namespace

void gemm_nt_small(const GemmArgs& g) {
  constexpr int64_t NJ = 3;
  const int64_t tiles = g.n / NJ;
  parallel_for(tiles, grain_for(tiles, 8), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) dot_rows<NJ>(g, t * NJ, 0, g.m);
  });
  for (int64_t j = tiles * NJ; j < g.n; ++j) dot_rows<1>(g, j, 0, g.m);
}

}  // namespace ot
