// The GEMM as built: decode-sized x·Wᵀ by our dot tiles (gemm_dot.cc), the rest by
// OpenBLAS on our thread pool when the addon has it (and OpenBLAS knows this
// CPU), else by our packed kernel (gemm_packed.cc).
#include "gemm.h"

#include "gemm_parts.h"
#include "isa.h"
#include "simd.h"
#include "thread_pool.h"

#ifdef OT_HAVE_CBLAS
#include <cblas.h>

#include <string>
#endif

namespace ot {
namespace {

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

/**
 * Whether OpenBLAS runs kernels made for the instruction set we run. A
 * DYNAMIC_ARCH OpenBLAS older than the CPU falls back to older kernels: its SSE3
 * "Prescott" ones on Emerald Rapids (4-5× slower than ours), its AVX2 "Haswell"
 * ones on Zen 5, where our AVX-512 kernel is 1.5-1.7× faster (BENCHMARKS.md).
 * Then the op takes ours. Asked per call: the ISA can be forced to AVX2.
 */
bool blas_is_current() {
  static const std::string core = openblas_get_corename();
  static const bool avx2 = [] {
    for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge",
                            "Barcelona", "Opteron", "Opteron_SSE3", "Bobcat", "Bulldozer", "Piledriver",
                            "Steamroller", "Nano", "Katmai", "Coppermine", "Northwood", "Banias"}) {
      if (core == old) return false;
    }
    return true;
  }();
  static const bool avx512 = core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
  return uses_avx512(active_isa()) ? avx512 : avx2;
}
#endif

}  // namespace

void gemm_scale_c(const GemmArgs& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* row = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) row[j] = g.beta == 0.0f ? 0.0f : g.beta * row[j];
  }
}

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
  if (g.k == 0) return gemm_scale_c(g);
  // Our dot tiles beat OpenBLAS on decode-sized x·Wᵀ (see BENCHMARKS.md).
  if (!g.trans_a && g.trans_b && g.m <= kSmallM && g.alpha != 0.0f) return gemm_nt_small(g);
#ifdef OT_HAVE_CBLAS
  if (blas_is_current()) return gemm_blas_on_pool(g);
#endif
  gemm_own(g);
}

const char* blas_name() {
#ifdef OT_HAVE_CBLAS
  return "openblas";
#else
  return nullptr;
#endif
}

const char* blas_core() {
#ifdef OT_HAVE_CBLAS
  return openblas_get_corename();
#else
  return nullptr;
#endif
}

const char* simd_name() {
#ifdef OT_AVX2
  return uses_avx512(active_isa()) ? "avx512" : "avx2+fma";
#else
  return "scalar";
#endif
}

}  // namespace ot
