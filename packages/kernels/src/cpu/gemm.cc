#include "gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "simd.h"
#include "thread_pool.h"

#ifdef OT_HAVE_CBLAS
#include <cblas.h>
#endif

namespace ot {
namespace {

// Register tile (rows × columns of C) and cache blocks (GotoBLAS layout): an
// [MC × KC] block of A stays in L2, a [KC × NR] panel of B in L1.
#if defined(__AVX512F__)
#define OT_GEMM_AVX512 1
constexpr int MR = 12;
constexpr int NR = 32;
#else
constexpr int MR = 6;
constexpr int NR = 16;
#endif
constexpr int64_t KC = 192;
constexpr int64_t MC = 120;  // multiple of MR
constexpr int64_t NC = 3072;  // multiple of NR

// Pack buffers grow once to their largest size and are reused: no allocation in
// steady state. Thread-local, so concurrent callers never share one.
float* scratch(std::vector<float>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

/** A[ic.., pc..] → panels of MR rows, k-major, scaled by alpha, zero-padded. */
void pack_a(const GemmArgs& g, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* out) {
  for (int64_t panel = 0; panel < mc; panel += MR) {
    const int rows = static_cast<int>(std::min<int64_t>(MR, mc - panel));
    float* dst = out + panel * kc;
    for (int r = 0; r < MR; ++r) {
      const int64_t i = ic + panel + r;
      if (r >= rows) {
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = 0.0f;
      } else if (!g.trans_a) {
        const float* src = g.a + i * g.lda + pc;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = g.alpha * src[p];
      } else {
        const float* src = g.a + pc * g.lda + i;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = g.alpha * src[p * g.lda];
      }
    }
  }
}

/** B[pc.., jc..] → panels of NR columns, k-major, zero-padded. Panels [p0, p1). */
void pack_b(const GemmArgs& g, int64_t jc, int64_t nc, int64_t pc, int64_t kc, float* out, int64_t p0, int64_t p1) {
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int64_t j0 = panel * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, nc - j0));
    float* dst = out + j0 * kc;
    if (!g.trans_b) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.b + (pc + p) * g.ldb + jc + j0;
        float* d = dst + p * NR;
        int c = 0;
        for (; c < cols; ++c) d[c] = src[c];
        for (; c < NR; ++c) d[c] = 0.0f;
      }
    } else {
      for (int c = 0; c < NR; ++c) {
        if (c >= cols) {
          for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = 0.0f;
          continue;
        }
        const float* src = g.b + (jc + j0 + c) * g.ldb + pc;
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = src[p];
      }
    }
  }
}

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
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp);
    const __m256 b1 = _mm256_loadu_ps(bp + 8);
    __m256 a = _mm256_broadcast_ss(ap + 0);
    c00 = _mm256_fmadd_ps(a, b0, c00);
    c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(ap + 1);
    c10 = _mm256_fmadd_ps(a, b0, c10);
    c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(ap + 2);
    c20 = _mm256_fmadd_ps(a, b0, c20);
    c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(ap + 3);
    c30 = _mm256_fmadd_ps(a, b0, c30);
    c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(ap + 4);
    c40 = _mm256_fmadd_ps(a, b0, c40);
    c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(ap + 5);
    c50 = _mm256_fmadd_ps(a, b0, c50);
    c51 = _mm256_fmadd_ps(a, b1, c51);
    ap += MR;
    bp += NR;
  }
  _mm256_storeu_ps(acc + 0, c00);
  _mm256_storeu_ps(acc + 8, c01);
  _mm256_storeu_ps(acc + 16, c10);
  _mm256_storeu_ps(acc + 24, c11);
  _mm256_storeu_ps(acc + 32, c20);
  _mm256_storeu_ps(acc + 40, c21);
  _mm256_storeu_ps(acc + 48, c30);
  _mm256_storeu_ps(acc + 56, c31);
  _mm256_storeu_ps(acc + 64, c40);
  _mm256_storeu_ps(acc + 72, c41);
  _mm256_storeu_ps(acc + 80, c50);
  _mm256_storeu_ps(acc + 88, c51);
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

struct BlockJob {
  const GemmArgs* g;
  int64_t jc, nc, pc, kc;
  const float* b_packed;
  int64_t m_blocks, n_groups, panels_per_group;
  bool first;
};

/** One task: an MC block of rows × a group of NR panels. */
void run_block(const BlockJob& job, int64_t task) {
  thread_local std::vector<float> a_buffer;
  thread_local float acc[MR * NR];
  const GemmArgs& g = *job.g;
  const int64_t ib = task / job.n_groups;
  const int64_t group = task % job.n_groups;
  const int64_t ic = ib * MC;
  const int64_t mc = std::min(MC, g.m - ic);
  float* a_packed = scratch(a_buffer, static_cast<size_t>(((mc + MR - 1) / MR) * MR * job.kc));
  pack_a(g, ic, mc, job.pc, job.kc, a_packed);
  const int64_t total_panels = (job.nc + NR - 1) / NR;
  const int64_t p0 = group * job.panels_per_group;
  const int64_t p1 = std::min(total_panels, p0 + job.panels_per_group);
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int64_t j0 = panel * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, job.nc - j0));
    const float* bp = job.b_packed + j0 * job.kc;
    for (int64_t ir = 0; ir < mc; ir += MR) {
      const int rows = static_cast<int>(std::min<int64_t>(MR, mc - ir));
      float* c = g.c + (ic + ir) * g.ldc + job.jc + j0;
#ifdef OT_GEMM_AVX512
      // Full tiles update C directly (beta 0 or 1); edges go through a local tile.
      if (rows == MR && cols == NR && (!job.first || g.beta == 0.0f || g.beta == 1.0f)) {
        micro_kernel_full(job.kc, a_packed + ir * job.kc, bp, c, g.ldc, job.first && g.beta == 0.0f);
        continue;
      }
#endif
      micro_kernel(job.kc, a_packed + ir * job.kc, bp, acc);
      store_tile(acc, c, g.ldc, rows, cols, job.first, g.beta);
    }
  }
}

void scale_c(const GemmArgs& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* row = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) row[j] = g.beta == 0.0f ? 0.0f : g.beta * row[j];
  }
}

#ifdef OT_AVX2
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

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
    for (int j = 0; j < NJ; ++j) sums[i][j] = hsum(acc[i][j]);
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

template <int NJ>
void dot_rows(const GemmArgs& g, int64_t j0) {
  dot_rows<NJ>(g, j0, 0, g.m);
}

/** C = alpha·A·Bᵀ + beta·C for A [m, k], B [n, k] with small m, parallel over n. */
void gemm_nt_small(const GemmArgs& g) {
  constexpr int64_t NJ = 3;
  const int64_t tiles = g.n / NJ;
  parallel_for(tiles, grain_for(tiles, 8), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) dot_rows<NJ>(g, t * NJ);
  });
  for (int64_t j = tiles * NJ; j < g.n; ++j) dot_rows<1>(g, j);
}

// Below this many rows, x·Wᵀ is computed by dot tiles instead of the packed kernel.
constexpr int64_t kSmallM = 24;

// gemm_rows: rows of A per block, so a block (64 × k floats) stays in L2 while
// every column tile of B streams past it once.
constexpr int64_t kRowBlock = 64;

}  // namespace

void gemm_rows(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.0f) return scale_c(g);
  constexpr int64_t NJ = 3;
  const int64_t tiles = g.n / NJ;
  parallel_for(tiles, grain_for(tiles, 8), [&](int64_t t0, int64_t t1) {
    for (int64_t i0 = 0; i0 < g.m; i0 += kRowBlock) {
      const int64_t i1 = std::min(g.m, i0 + kRowBlock);
      for (int64_t t = t0; t < t1; ++t) dot_rows<NJ>(g, t * NJ, i0, i1);
    }
  });
  for (int64_t j = tiles * NJ; j < g.n; ++j) dot_rows<1>(g, j);
}

void gemm_own(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.0f) return scale_c(g);
  if (!g.trans_a && g.trans_b && g.m <= kSmallM) return gemm_nt_small(g);
  thread_local std::vector<float> b_buffer;
  const int threads = num_threads();
  for (int64_t jc = 0; jc < g.n; jc += NC) {
    const int64_t nc = std::min(NC, g.n - jc);
    const int64_t panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc);
      float* b_packed = scratch(b_buffer, static_cast<size_t>(panels * NR * kc));
      parallel_for(panels, grain_for(panels, 2), [&](int64_t p0, int64_t p1) { pack_b(g, jc, nc, pc, kc, b_packed, p0, p1); });
      BlockJob job{&g, jc, nc, pc, kc, b_packed, (g.m + MC - 1) / MC, 1, panels, pc == 0};
      // Few row blocks (small m): split the columns too, so every thread has work.
      if (job.m_blocks < threads * 2) {
        job.n_groups = std::min<int64_t>(panels, (threads * 4 + job.m_blocks - 1) / job.m_blocks);
        job.panels_per_group = (panels + job.n_groups - 1) / job.n_groups;
        job.n_groups = (panels + job.panels_per_group - 1) / job.panels_per_group;
      }
      parallel_for(job.m_blocks * job.n_groups, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) run_block(job, t);
      });
    }
  }
}

#ifdef OT_HAVE_CBLAS
void cblas(const GemmArgs& g) {
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.alpha, g.a, static_cast<int>(g.lda),
              g.b, static_cast<int>(g.ldb), g.beta, g.c, static_cast<int>(g.ldc));
}

/**
 * OpenBLAS's kernels on our thread pool: OpenBLAS itself runs single-threaded and
 * each pool thread multiplies a slice of C. Two pools of spinning threads (ours and
 * OpenBLAS's) on the same cores slowed every op that followed a matmul.
 */
void gemm_blas_on_pool(const GemmArgs& g) {
  static const bool single = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single;
  const int threads = num_threads();
  const bool split_n = g.n >= g.m;
  const int64_t extent = split_n ? g.n : g.m;
  const int64_t align = split_n ? 16 : 8;
  int64_t chunk = (extent + threads - 1) / threads;
  chunk = (chunk + align - 1) / align * align;
  parallel_for(extent, chunk, [&](int64_t lo, int64_t hi) {
    GemmArgs part = g;
    if (split_n) {
      part.n = hi - lo;
      part.b = g.trans_b ? g.b + lo * g.ldb : g.b + lo;
      part.c = g.c + lo;
    } else {
      part.m = hi - lo;
      part.a = g.trans_a ? g.a + lo : g.a + lo * g.lda;
      part.c = g.c + lo * g.ldc;
    }
    cblas(part);
  });
}
#endif

bool gemm_blas(const GemmArgs& g) {
#ifdef OT_HAVE_CBLAS
  // The reference: OpenBLAS with its own threads, as a user of it would call it.
  openblas_set_num_threads(num_threads());
  cblas(g);
  openblas_set_num_threads(1);
  return true;
#else
  return false;
#endif
}

void gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) return scale_c(g);
  // Our dot tiles beat OpenBLAS on decode-sized x·Wᵀ (see BENCHMARKS.md).
  if (!g.trans_a && g.trans_b && g.m <= kSmallM && g.alpha != 0.0f) return gemm_nt_small(g);
#ifdef OT_HAVE_CBLAS
  gemm_blas_on_pool(g);
#else
  gemm_own(g);
#endif
}

const char* blas_name() {
#ifdef OT_HAVE_CBLAS
  return "openblas";
#else
  return nullptr;
#endif
}

const char* simd_name() {
#ifdef OT_AVX2
  return "avx2+fma";
#else
  return "scalar";
#endif
}

}  // namespace ot
