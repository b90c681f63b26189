// AMX products over a packed bf16 weight (see gemm_amx.h). Tiles 0–3 hold C (up
// to 2 A tiles × 2 weight panels), 4–5 A, 6–7 the weight. An A tile is 16 rows of
// 32 bf16: five rows of x as their three parts (rows 3s, 3s + 1, 3s + 2), row 15
// zero. All rows of x are split once per call into that layout; then each task
// runs its columns over all of K, tile after tile in K order.
// GCC 12 warns falsely inside its own AVX-512 intrinsics when the target comes
// from a pragma rather than -march (GCC bug 105593); set before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "gemm_amx.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define OT_AMX 1
#endif

namespace ot {
namespace {

constexpr int64_t kTileK = 32;     // bf16 in a tile row (64 bytes)
constexpr int64_t kTileRows = 16;  // rows of every tile
constexpr int kParts = 3;          // hi, lo, lo2
constexpr int64_t kRowsPerTile = 5;  // rows of x per A tile: 15 part rows, the 16th zero
constexpr int64_t kTileElements = kTileRows * kTileK;
// Panels whose packed weight (≤ 1 MiB) stays in L2 while the A tiles stream past,
// at most kMaxChunkPanels (their C tiles, 8 KiB a panel, are kept between K blocks).
constexpr int64_t kChunkBytes = 1024 * 1024;
constexpr int64_t kMaxChunkPanels = 32;
// K per pass over a chunk: two A tiles' slice (16 KiB) stays in L1.
constexpr int64_t kKBlock = 256;

int64_t padded_k(int64_t k) { return (k + kTileK - 1) / kTileK * kTileK; }
int64_t panels_of(int64_t n) { return (n + kAmxPanelColumns - 1) / kAmxPanelColumns; }

}  // namespace

int64_t amx_packed_elements(int64_t n, int64_t k) { return panels_of(n) * kAmxPanelColumns * padded_k(k); }

void amx_pack_weight(const uint16_t* w, int64_t n, int64_t k, uint16_t* out) {
  const int64_t kp = padded_k(k), panels = panels_of(n);
  parallel_for(panels, grain_for(panels), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint16_t* panel = out + p * kAmxPanelColumns * kp;
      for (int64_t q = 0; q < kp; ++q) {
        // k = q sits in tile q / 32, row (q % 32) / 2, slot 2c + q % 2.
        uint16_t* row = panel + (q / kTileK) * kTileElements + (q % kTileK) / 2 * kTileK + q % 2;
        for (int64_t c = 0; c < kAmxPanelColumns; ++c) {
          const int64_t j = p * kAmxPanelColumns + c;
          row[2 * c] = j < n && q < k ? w[j * k + q] : 0;
        }
      }
    }
  });
}

#ifdef OT_AMX

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")
namespace {

struct TileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};

constexpr TileConfig every_tile_16_by_64() {
  TileConfig config{};
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kTileRows;
    config.bytes_per_row[t] = kTileK * 2;
  }
  return config;
}

// ldtilecfg reads 64 bytes, but GCC 12's _tile_loadconfig tells the compiler of
// only 8, which may then drop the stores of a local config as dead: a constant
// object holds all 64 whatever the optimiser does.
alignas(64) constexpr TileConfig kTileConfig = every_tile_16_by_64();

/** Every tile 16 rows × 64 bytes (the configuration is per thread: each task loads it). */
void configure_tiles() { _tile_loadconfig(&kTileConfig); }

inline __m512 widen(__m256bh h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(reinterpret_cast<__m256i&>(h)), 16));
}

/** 16 floats → their hi, lo and lo2 bf16 parts (an infinite x keeps hi = ±inf, lo = lo2 = 0). */
inline void split16(__m512 x, uint16_t* hi, uint16_t* lo, uint16_t* lo2) {
  const __m256bh h = _mm512_cvtneps_pbh(x);
  __m512 r = _mm512_sub_ps(x, widen(h));
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());
  const __m256bh l = _mm512_cvtneps_pbh(r);
  const __m256bh l2 = _mm512_cvtneps_pbh(_mm512_sub_ps(r, widen(l)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi), reinterpret_cast<const __m256i&>(h));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo), reinterpret_cast<const __m256i&>(l));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo2), reinterpret_cast<const __m256i&>(l2));
}

/** A tile t of x's parts: x rows [5t, 5t + 5) ∩ [0, m) → 16 rows of kp bf16 (pads zero). */
void split_tile(const float* x, int64_t m, int64_t k, int64_t kp, int64_t t, uint16_t* a) {
  std::memset(a, 0, sizeof(uint16_t) * kTileRows * kp);
  for (int64_t s = 0; s < kRowsPerTile && kRowsPerTile * t + s < m; ++s) {
    const float* row = x + (kRowsPerTile * t + s) * k;
    uint16_t* hi = a + kParts * s * kp;
    uint16_t* lo = hi + kp;
    uint16_t* lo2 = lo + kp;
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) split16(_mm512_loadu_ps(row + p), hi + p, lo + p, lo2 + p);
    if (p < k) {
      const __mmask16 tail = static_cast<__mmask16>((1u << (k - p)) - 1);
      alignas(64) uint16_t h[16], l[16], l2[16];
      split16(_mm512_maskz_loadu_ps(tail, row + p), h, l, l2);
      std::memcpy(hi + p, h, sizeof(uint16_t) * (k - p));
      std::memcpy(lo + p, l, sizeof(uint16_t) * (k - p));
      std::memcpy(lo2 + p, l2, sizeof(uint16_t) * (k - p));
    }
  }
}

struct Product {
  int64_t m, n, k, kp;
  const uint16_t* a;  // x's parts: ceil(m / 5) A tiles of 16 × kp
  const uint16_t* w;  // amx_pack_weight's panels
  bool accumulate;
  float* y;
};

/**
 * MA A tiles (from tile t) × NB panels (from panel p) over K elements [q0, q1):
 * the C tiles start from c (MA·NB tiles of 16 × 16 floats, row-major per tile)
 * or, when q0 is 0, from zero, and go back to c. Storing and reloading a tile is
 * exact, so every sum still runs over K in one order.
 */
template <int MA, int NB>
void run_tiles(const Product& g, int64_t t, int64_t p, int64_t q0, int64_t q1, float* c) {
  const uint16_t* a = g.a + t * kTileRows * g.kp;
  const uint16_t* b = g.w + p * kAmxPanelColumns * g.kp;
  const int64_t a_stride = g.kp * 2, panel = kAmxPanelColumns * g.kp;
  constexpr int64_t kBytes = kAmxPanelColumns * sizeof(float);
  if (q0 == 0) {
    _tile_zero(0);
    if constexpr (NB == 2) _tile_zero(1);
    if constexpr (MA == 2) _tile_zero(2);
    if constexpr (MA == 2 && NB == 2) _tile_zero(3);
  } else {
    _tile_loadd(0, c, kBytes);
    if constexpr (NB == 2) _tile_loadd(1, c + 256, kBytes);
    if constexpr (MA == 2) _tile_loadd(2, c + NB * 256, kBytes);
    if constexpr (MA == 2 && NB == 2) _tile_loadd(3, c + 3 * 256, kBytes);
  }
  for (int64_t q = q0; q < q1; q += kTileK) {
    _tile_loadd(4, a + q, a_stride);
    if constexpr (MA == 2) _tile_loadd(5, a + kTileRows * g.kp + q, a_stride);
    const uint16_t* bq = b + q / kTileK * kTileElements;
    _tile_loadd(6, bq, kTileK * 2);
    if constexpr (NB == 2) _tile_loadd(7, bq + panel, kTileK * 2);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NB == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (MA == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (MA == 2 && NB == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, kBytes);
  if constexpr (NB == 2) _tile_stored(1, c + 256, kBytes);
  if constexpr (MA == 2) _tile_stored(2, c + NB * 256, kBytes);
  if constexpr (MA == 2 && NB == 2) _tile_stored(3, c + 3 * 256, kBytes);
}

/** C tile (A tile t, panel p) → y: each row of x is hi + (lo + lo2), added to y when accumulating. */
void store_tile(const Product& g, int64_t t, int64_t p, const float* c) {
  const int64_t j0 = p * kAmxPanelColumns;
  const int cols = static_cast<int>(std::min<int64_t>(kAmxPanelColumns, g.n - j0));
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
  for (int64_t s = 0; s < kRowsPerTile && kRowsPerTile * t + s < g.m; ++s) {
    const float* part = c + kParts * s * kAmxPanelColumns;
    const __m512 hi = _mm512_loadu_ps(part);
    const __m512 lo = _mm512_loadu_ps(part + kAmxPanelColumns);
    const __m512 lo2 = _mm512_loadu_ps(part + 2 * kAmxPanelColumns);
    __m512 sum = _mm512_add_ps(hi, _mm512_add_ps(lo, lo2));
    float* out = g.y + (kRowsPerTile * t + s) * g.n + j0;
    if (g.accumulate) sum = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), sum);
    _mm512_mask_storeu_ps(out, mask, sum);
  }
}

/** MA A tiles from t × panels [p0, p1) (a chunk), K a block at a time; c holds the chunk's C tiles. */
template <int MA>
void run_rows(const Product& g, int64_t t, int64_t p0, int64_t p1, float* c) {
  for (int64_t q0 = 0; q0 < g.kp; q0 += kKBlock) {
    const int64_t q1 = std::min(g.kp, q0 + kKBlock);
    for (int64_t p = p0; p < p1; p += 2) {
      float* cp = c + (p - p0) * MA * 256;
      if (p + 1 < p1) run_tiles<MA, 2>(g, t, p, q0, q1, cp);
      else run_tiles<MA, 1>(g, t, p, q0, q1, cp);
    }
  }
  for (int64_t p = p0; p < p1; p += 2) {
    const int nb = p + 1 < p1 ? 2 : 1;
    for (int i = 0; i < MA; ++i)
      for (int j = 0; j < nb; ++j) store_tile(g, t + i, p + j, c + (p - p0) * MA * 256 + (i * nb + j) * 256);
  }
}

/**
 * A tiles [t0, t1) × panels [p0, p1): the panels a chunk at a time (its weight
 * stays in L2), two A tiles at a time, K in blocks (their slice of A stays in L1).
 */
void run_task(const Product& g, int64_t t0, int64_t t1, int64_t p0, int64_t p1) {
  thread_local std::vector<float> c_buffer;
  const int64_t fit = kChunkBytes / (kAmxPanelColumns * g.kp * 2) / 2 * 2;
  const int64_t chunk = std::clamp<int64_t>(fit, 2, kMaxChunkPanels);
  if (c_buffer.size() < static_cast<size_t>(chunk * 2 * 256)) c_buffer.resize(chunk * 2 * 256);
  configure_tiles();
  for (int64_t pc = p0; pc < p1; pc += chunk) {
    const int64_t pe = std::min(p1, pc + chunk);
    for (int64_t t = t0; t < t1; t += 2) {
      if (t + 1 < t1) run_rows<2>(g, t, pc, pe, c_buffer.data());
      else run_rows<1>(g, t, pc, pe, c_buffer.data());
    }
  }
  _tile_release();
}

}  // namespace
#pragma GCC pop_options

void amx_gemm_prepacked(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* packed, bool accumulate,
                        float* y) {
  thread_local std::vector<uint16_t> parts;
  const int64_t kp = padded_k(k), tiles = (m + kRowsPerTile - 1) / kRowsPerTile;
  if (parts.size() < static_cast<size_t>(tiles * kTileRows * kp)) parts.resize(tiles * kTileRows * kp);
  uint16_t* a = parts.data();
  parallel_for(tiles, grain_for(tiles), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) split_tile(x, m, k, kp, t, a + t * kTileRows * kp);
  });
  const Product g{m, n, k, kp, a, packed, accumulate, y};
  // Tasks split the panels (in pairs) first, then the A tiles (in pairs) when panels are few.
  const int64_t panels = panels_of(n), pairs = (panels + 1) / 2, tile_pairs = (tiles + 1) / 2;
  const int64_t threads = num_threads(), want = threads > 1 ? threads * 2 : 1;
  const int64_t col_tasks = std::min(pairs, want);
  const int64_t row_tasks = std::min(tile_pairs, (want + col_tasks - 1) / col_tasks);
  const int64_t pairs_per = (pairs + col_tasks - 1) / col_tasks, tile_pairs_per = (tile_pairs + row_tasks - 1) / row_tasks;
  parallel_for(col_tasks * row_tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t task = b; task < e; ++task) {
      const int64_t t0 = task % row_tasks * tile_pairs_per * 2, p0 = task / row_tasks * pairs_per * 2;
      const int64_t t1 = std::min(tiles, t0 + tile_pairs_per * 2), p1 = std::min(panels, p0 + pairs_per * 2);
      if (t0 < t1 && p0 < p1) run_task(g, t0, t1, p0, p1);
    }
  });
}

#else

// Not x86-64: active_isa() is never Isa::Amx, so nothing calls this.
void amx_gemm_prepacked(int64_t, int64_t, int64_t, const float*, const uint16_t*, bool, float*) { std::abort(); }

#endif

}  // namespace ot
