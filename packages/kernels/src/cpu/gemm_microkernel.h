// The packed GEMM's register tiles, for gemm_packed.cc only: an [R × NR] tile of C
// (R ≤ MR rows) accumulates in registers over a k-major panel of packed A (MR
// rows) and one of packed B (NR columns). One tile per instruction set: 6×16 on
// AVX2 (12 ymm accumulators), 12×32 on AVX-512 (24 zmm), plus 1- and 2-row
// tiles over several panels for decode-sized products; each compiled for its
// target and picked at run time (isa.h).
//
// Every tile sums C[i, j] in one order: acc = fma(a[i, p], b[p, j], acc) for p
// ascending over the K block, then C = acc, C + acc or beta·C + acc (as fma).
// The row count R, the tile and the instruction set change only how many such
// sums run side by side, so a row of C is the same bits whatever m is, and the
// same on both paths.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "simd.h"

namespace ot {
namespace gemm_tile {

/** How a tile of C takes one K block's sums. */
enum class Store { Overwrite, Accumulate, ScaleBeta };

struct TileArgs {
  int64_t kc;      // the K block's length
  const float* a;  // packed A: kc steps of MR floats (rows ≥ R unused)
  const float* b;  // packed B: kc steps of NR floats (columns ≥ cols are zero)
  const uint16_t* b16;  // or packed bf16 B (pack_weight_bf16's pairs), when the tile reads bf16
  int64_t panel_stride;  // floats from one packed B panel to the next (wide tiles)
  float* c;
  int64_t ldc;
  int cols;  // valid columns of the tile: 1..NR per panel, only the last one partial
  Store store;
  float beta;  // for Store::ScaleBeta
};

using TileFn = void (*)(const TileArgs&);

/** A tile over several B panels at once (for 1 or 2 rows). */
struct WideTile {
  int panels;
  TileFn fn;
};

namespace {

#ifdef OT_AVX2
// How far ahead of its loads a tile prefetches packed B. A decode-sized product
// streams its frozen weight from memory once per step, one panel at a time per
// core; the hardware prefetchers alone left 16-row products at about 23 GB/s,
// against 40–58 for batch 1's four-panel f32 tiles (BENCHMARKS.md), which read
// several streams at once and are left as they are. The four-panel bf16 tiles
// prefetch too: their panel rows are half as long, and batch-1 bf16 products
// rose from 38–41 to 45–46 GB/s on AVX2, 50–56 to 60–62 on AVX-512. Sums unchanged.
constexpr int64_t kPrefetchBytes = 8192;

/** Prefetches the cache line kPrefetchBytes past `p` (past the end of B it is dropped: prefetches never fault). */
inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
}

constexpr int kAvx2MR = 6;
constexpr int kAvx2NR = 16;

/**
 * R rows × P panels (P·16 columns; P > 1 keeps 8 sums in flight when R is small,
 * so the FMA latency does not bound a decode-sized product). Bf16: B is bf16
 * pairs (column c and c + 8 in one 32-bit lane), widened exactly by a shift and
 * a mask into the same two vectors an f32 panel gives, so the sums are the same.
 */
template <int R, int P, bool Bf16 = false>
void tile_avx2(const TileArgs& t) {
  __m256 acc[P][2][R];
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[q][0][r] = acc[q][1][r] = _mm256_setzero_ps();
  const float* ap = t.a;
  const float* bp = t.b;
  const uint16_t* bp16 = t.b16;
  const int64_t kc = t.kc;  // locals: the stores below could alias t
  const int64_t panel = t.panel_stride;
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    __m256 b[P][2];
#pragma GCC unroll 16
    for (int q = 0; q < P; ++q) {
      if constexpr (Bf16) {
        prefetch_ahead(bp16 + q * panel);
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp16 + q * panel));
        b[q][0] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        b[q][1] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
      } else {
        if constexpr (P == 1) prefetch_ahead(bp + q * panel);
        b[q][0] = _mm256_loadu_ps(bp + q * panel);
        b[q][1] = _mm256_loadu_ps(bp + q * panel + 8);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 16
      for (int q = 0; q < P; ++q) {
        acc[q][0][r] = _mm256_fmadd_ps(a, b[q][0], acc[q][0][r]);
        acc[q][1][r] = _mm256_fmadd_ps(a, b[q][1], acc[q][1][r]);
      }
    }
    ap += kAvx2MR;
    if constexpr (Bf16) bp16 += kAvx2NR;
    else bp += kAvx2NR;
  }
  const __m256 beta = _mm256_set1_ps(t.beta);
  const int64_t ldc = t.ldc;
  const Store store = t.store;
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q) {
    const int cols = t.cols - q * kAvx2NR;  // only the last panel may be partial
    const bool full = cols >= kAvx2NR;
    const __m256i m0 = lane_mask(cols < 8 ? cols : 8);
    const __m256i m1 = lane_mask(cols > 8 ? (full ? 8 : cols - 8) : 0);
    float* const c = t.c + q * kAvx2NR;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* row = c + r * ldc;
      __m256 v0 = acc[q][0][r], v1 = acc[q][1][r];
      if (store != Store::Overwrite) {
        const __m256 c0 = full ? _mm256_loadu_ps(row) : _mm256_maskload_ps(row, m0);
        const __m256 c1 = full ? _mm256_loadu_ps(row + 8) : _mm256_maskload_ps(row + 8, m1);
        v0 = store == Store::Accumulate ? _mm256_add_ps(c0, v0) : _mm256_fmadd_ps(beta, c0, v0);
        v1 = store == Store::Accumulate ? _mm256_add_ps(c1, v1) : _mm256_fmadd_ps(beta, c1, v1);
      }
      if (full) {
        _mm256_storeu_ps(row, v0);
        _mm256_storeu_ps(row + 8, v1);
      } else {
        _mm256_maskstore_ps(row, m0, v0);
        _mm256_maskstore_ps(row + 8, m1, v1);
      }
    }
  }
}

constexpr TileFn kAvx2Tiles[kAvx2MR + 1] = {nullptr,         tile_avx2<1, 1>, tile_avx2<2, 1>, tile_avx2<3, 1>,
                                            tile_avx2<4, 1>, tile_avx2<5, 1>, tile_avx2<6, 1>};
// Rows 1 and 2 over several panels at once: [rows] → {panels, tile}.
constexpr WideTile kAvx2Wide[3] = {{1, nullptr}, {4, tile_avx2<1, 4>}, {2, tile_avx2<2, 2>}};
constexpr TileFn kAvx2Bf16Tiles[kAvx2MR + 1] = {
    nullptr, tile_avx2<1, 1, true>, tile_avx2<2, 1, true>, tile_avx2<3, 1, true>,
    tile_avx2<4, 1, true>, tile_avx2<5, 1, true>, tile_avx2<6, 1, true>};
constexpr WideTile kAvx2Bf16Wide[3] = {{1, nullptr}, {4, tile_avx2<1, 4, true>}, {2, tile_avx2<2, 2, true>}};

constexpr int kAvx512MR = 12;
constexpr int kAvx512NR = 32;

/** R rows × P panels (P·32 columns), as tile_avx2 (bf16 pairs: column c and c + 16). */
template <int R, int P, bool Bf16 = false>
OT_TARGET_AVX512 void tile_avx512(const TileArgs& t) {
  __m512 acc[P][2][R];
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[q][0][r] = acc[q][1][r] = _mm512_setzero_ps();
  const float* ap = t.a;
  const float* bp = t.b;
  const uint16_t* bp16 = t.b16;
  const int64_t kc = t.kc;
  const int64_t panel = t.panel_stride;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b[P][2];
#pragma GCC unroll 16
    for (int q = 0; q < P; ++q) {
      if constexpr (Bf16) {
        prefetch_ahead(bp16 + q * panel);
        const __m512i v = _mm512_loadu_si512(bp16 + q * panel);
        b[q][0] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        b[q][1] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
      } else {
        if constexpr (P == 1) {
          prefetch_ahead(bp + q * panel);
          prefetch_ahead(bp + q * panel + 16);  // a 32-float row of the panel is two lines
        }
        b[q][0] = _mm512_loadu_ps(bp + q * panel);
        b[q][1] = _mm512_loadu_ps(bp + q * panel + 16);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
#pragma GCC unroll 16
      for (int q = 0; q < P; ++q) {
        acc[q][0][r] = _mm512_fmadd_ps(a, b[q][0], acc[q][0][r]);
        acc[q][1][r] = _mm512_fmadd_ps(a, b[q][1], acc[q][1][r]);
      }
    }
    ap += kAvx512MR;
    if constexpr (Bf16) bp16 += kAvx512NR;
    else bp += kAvx512NR;
  }
  const __m512 beta = _mm512_set1_ps(t.beta);
  const int64_t ldc = t.ldc;
  const Store store = t.store;
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q) {
    const int cols = t.cols - q * kAvx512NR;
    const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1) : 0;
    float* const c = t.c + q * kAvx512NR;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* row = c + r * ldc;
      __m512 v0 = acc[q][0][r], v1 = acc[q][1][r];
      if (store != Store::Overwrite) {
        const __m512 c0 = _mm512_maskz_loadu_ps(m0, row);
        const __m512 c1 = _mm512_maskz_loadu_ps(m1, row + 16);
        v0 = store == Store::Accumulate ? _mm512_add_ps(c0, v0) : _mm512_fmadd_ps(beta, c0, v0);
        v1 = store == Store::Accumulate ? _mm512_add_ps(c1, v1) : _mm512_fmadd_ps(beta, c1, v1);
      }
      _mm512_mask_storeu_ps(row, m0, v0);
      _mm512_mask_storeu_ps(row + 16, m1, v1);
    }
  }
}

constexpr TileFn kAvx512Tiles[kAvx512MR + 1] = {
    nullptr,            tile_avx512<1, 1>,  tile_avx512<2, 1>,  tile_avx512<3, 1>, tile_avx512<4, 1>,
    tile_avx512<5, 1>,  tile_avx512<6, 1>,  tile_avx512<7, 1>,  tile_avx512<8, 1>, tile_avx512<9, 1>,
    tile_avx512<10, 1>, tile_avx512<11, 1>, tile_avx512<12, 1>};
constexpr WideTile kAvx512Wide[3] = {{1, nullptr}, {4, tile_avx512<1, 4>}, {2, tile_avx512<2, 2>}};
constexpr TileFn kAvx512Bf16Tiles[kAvx512MR + 1] = {
    nullptr,
    tile_avx512<1, 1, true>,
    tile_avx512<2, 1, true>,
    tile_avx512<3, 1, true>,
    tile_avx512<4, 1, true>,
    tile_avx512<5, 1, true>,
    tile_avx512<6, 1, true>,
    tile_avx512<7, 1, true>,
    tile_avx512<8, 1, true>,
    tile_avx512<9, 1, true>,
    tile_avx512<10, 1, true>,
    tile_avx512<11, 1, true>,
    tile_avx512<12, 1, true>};
constexpr WideTile kAvx512Bf16Wide[3] = {
    {1, nullptr}, {4, tile_avx512<1, 4, true>}, {2, tile_avx512<2, 2, true>}};
#else
// Not x86-64: a portable tile with the same order of operations.
constexpr int kPortableMR = 4;
constexpr int kPortableNR = 16;

/** bf16 pair slot j of a 16-column panel row: column j/2 (even j) or j/2 + 8 (odd j), as the x86 tiles read them. */
inline float portable_bf16(const uint16_t* row, int column) {
  const int slot = column < kPortableNR / 2 ? 2 * column : 2 * (column - kPortableNR / 2) + 1;
  const uint32_t bits = static_cast<uint32_t>(row[slot]) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <int R, bool Bf16 = false>
void tile_portable(const TileArgs& t) {
  float acc[R][kPortableNR] = {};
  for (int64_t p = 0; p < t.kc; ++p) {
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < kPortableNR; ++j) {
        const float b = Bf16 ? portable_bf16(t.b16 + p * kPortableNR, j) : t.b[p * kPortableNR + j];
        acc[r][j] = std::fma(t.a[p * kPortableMR + r], b, acc[r][j]);
      }
  }
  for (int r = 0; r < R; ++r) {
    float* row = t.c + r * t.ldc;
    for (int j = 0; j < t.cols && j < kPortableNR; ++j) {
      if (t.store == Store::Overwrite) row[j] = acc[r][j];
      else if (t.store == Store::Accumulate) row[j] = row[j] + acc[r][j];
      else row[j] = std::fma(t.beta, row[j], acc[r][j]);
    }
  }
}

constexpr TileFn kPortableTiles[kPortableMR + 1] = {nullptr, tile_portable<1>, tile_portable<2>, tile_portable<3>,
                                                    tile_portable<4>};
constexpr WideTile kPortableWide[3] = {{1, nullptr}, {1, nullptr}, {1, nullptr}};
constexpr TileFn kPortableBf16Tiles[kPortableMR + 1] = {nullptr, tile_portable<1, true>, tile_portable<2, true>,
                                                        tile_portable<3, true>, tile_portable<4, true>};
#endif

}  // namespace
}  // namespace gemm_tile
}  // namespace ot
