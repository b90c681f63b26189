// Products with bf16 weights (see gemm_bf16.h). The tiles are written once
// (gemm_bf16_kernel.inc) and compiled per instruction set: AVX2 and AVX-512
// each widen bf16 → f32 as they load (one load split into even and odd lanes by
// a shift and a mask: exact, no shuffle) and accumulate with f32 FMA, so
// activations keep their full precision. vdpbf16ps
// (AVX512_BF16) would round the activations to bf16 too, which is why it is not
// used (the AMX path keeps their precision by splitting them into three bf16
// parts, gemm_amx.h; only the sampler's packed products take it). active_isa()
// picks the set at run time.
#include "gemm_bf16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "isa.h"
#include "thread_pool.h"

#if defined(__x86_64__) || defined(_M_X64)
// GCC 12 warns falsely inside its own AVX-512 intrinsics (their _mm512_undefined_*
// placeholders) when AVX-512 comes from a target pragma rather than -march (GCC
// bug 105593). Set before the header, so it covers the header's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define OT_BF16_X86 1
#endif

namespace ot {
namespace {

inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

struct Nt {
  int64_t m, n, k;
  const float* x;     // [m, k]
  const uint16_t* w;  // [n, k]
  bool accumulate;
  float* y;  // [m, n]
};

struct Nn {
  int64_t m, n, k;
  const float* dy;    // [m, n]
  const uint16_t* w;  // [n, k]
  bool accumulate;
  float* dx;  // [m, k]
};

// Rows of x per block in the forward, so a block stays in L2 while the weight rows stream past.
constexpr int64_t kRowBlock = 64;

/** One instruction set's entry points (column tiles and blocks as the parallel units). */
struct Kernels {
  void (*split_rows)(const float*, int64_t, int64_t, float*);
  int64_t nt_columns;
  void (*nt_range)(const Nt&, int64_t, int64_t);
  int64_t (*nn_blocks)(int64_t);
  void (*nn_range)(const Nn&, int64_t, int64_t);
};

}  // namespace

#ifdef OT_BF16_X86

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
namespace {
struct V {
  using R = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kNtColumns = 2;  // 4 × 2 accumulators + 2 × 2 weights + 2 x of 16 registers
  static constexpr int kStrip = 1;  // 4 × 2 accumulators + 2 weights + 1 dy
  static R zero() { return _mm256_setzero_ps(); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R set1(float v) { return _mm256_set1_ps(v); }
  static void split(const uint16_t* p, R& even, R& odd) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};
#include "gemm_bf16_kernel.inc"
}  // namespace
constexpr Kernels kKernels{split_rows, V::kNtColumns, nt_range, nn_blocks, nn_range};
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")
namespace avx512 {
namespace {
struct V {
  using R = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kNtColumns = 4;  // 4 × 4 accumulators + 4 × 2 weights + 2 x of 32 registers
  static constexpr int kStrip = 2;      // 4 × 4 accumulators + 4 weights + 1 dy
  static R zero() { return _mm512_setzero_ps(); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static void split(const uint16_t* p, R& even, R& odd) {
    const __m512i v = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(R v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};
#include "gemm_bf16_kernel.inc"
}  // namespace
constexpr Kernels kKernels{split_rows, V::kNtColumns, nt_range, nn_blocks, nn_range};
}  // namespace avx512
#pragma GCC pop_options

#else  // not x86: the same tiles one lane wide

namespace scalar {
namespace {
struct V {
  using R = float;
  static constexpr int kLanes = 1;
  static constexpr int kNtColumns = 4;
  static constexpr int kStrip = 4;
  static R zero() { return 0.0f; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R set1(float v) { return v; }
  static void split(const uint16_t* p, R& even, R& odd) {
    even = bf16_to_f32(p[0]);
    odd = bf16_to_f32(p[1]);
  }
  static R fma(R a, R b, R c) { return std::fma(a, b, c); }
  static float hsum(R v) { return v; }
};
#include "gemm_bf16_kernel.inc"
}  // namespace
constexpr Kernels kKernels{split_rows, V::kNtColumns, nt_range, nn_blocks, nn_range};
}  // namespace scalar

#endif

namespace {

const Kernels& kernels() {
#ifdef OT_BF16_X86
  return uses_avx512(active_isa()) ? avx512::kKernels : avx2::kKernels;
#else
  return scalar::kKernels;
#endif
}

}  // namespace

void gemm_bf16_nt(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* w, bool accumulate, float* y) {
  if (m == 0 || n == 0) return;
  const Kernels& kn = kernels();
  // x in the kernels' chunk layout: m·k floats, small next to the n·k weights.
  std::vector<float> split(static_cast<size_t>(m * k));
  kn.split_rows(x, m, k, split.data());
  const Nt g{m, n, k, split.data(), w, accumulate, y};
  const int64_t tiles = (n + kn.nt_columns - 1) / kn.nt_columns;
  // The work is split by columns only: a row's sums never depend on how rows are grouped.
  parallel_for(tiles, grain_for(tiles, 8), [&](int64_t t0, int64_t t1) { kn.nt_range(g, t0, t1); });
}

void gemm_bf16_nn(int64_t m, int64_t n, int64_t k, const float* dy, const uint16_t* w, bool accumulate, float* dx) {
  if (m == 0 || k == 0) return;
  const Kernels& kn = kernels();
  const Nn g{m, n, k, dy, w, accumulate, dx};
  const int64_t blocks = kn.nn_blocks(k);
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) { kn.nn_range(g, b0, b1); });
}

void embedding_bf16(int64_t n, int64_t d, const int32_t* ids, const uint16_t* table, float* out) {
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const uint16_t* row = table + static_cast<int64_t>(ids[i]) * d;
      float* dst = out + i * d;
      for (int64_t c = 0; c < d; ++c) dst[c] = bf16_to_f32(row[c]);
    }
  });
}

}  // namespace ot
