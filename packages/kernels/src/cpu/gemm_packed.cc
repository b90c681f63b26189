// The addon's own packed GEMM, the kernel behind both "own" and "rows". Each task
// owns a range of C's columns (and, when columns are few, of its rows); per K
// block it packs its rows of A into MR-row panels (scaled by alpha) and, a chunk
// at a time, its columns of B into NR-column panels, then runs the register tile
// (gemm_microkernel.h) over them. K blocks have a fixed length (KC) and are taken
// in order, so C[i, j]'s sum does not depend on m, on the tasks or on the threads:
// the product is batch-invariant and deterministic, on either instruction set.
// A frozen weight can be packed once (pack_weight) into the same panels, K block
// after K block, so a decode step does not repack it: the same sums, no packing.
// GCC 12 warns falsely inside its own AVX-512 intrinsics (their _mm512_undefined_*
// placeholders) when AVX-512 comes from a target attribute rather than -march
// (GCC bug 105593); set before the headers, so it covers their code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <vector>

#include "gemm.h"
#include "gemm_amx.h"
#include "gemm_microkernel.h"
#include "gemm_parts.h"
#include "isa.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

using gemm_tile::Store;
using gemm_tile::TileArgs;
using gemm_tile::TileFn;

// The K block: fixed, and the same on every path, so both give the same bits.
constexpr int64_t KC = 256;
// Columns of B packed at a time: a [KC × kChunkCols] block (192 KiB) stays in L2
// while the rows of A stream past it.
constexpr int64_t kChunkCols = 192;
// Rows of A per task at most: a [kTaskRows × KC] block (512 KiB) in L2.
constexpr int64_t kTaskRows = 512;
// Tasks of at most this many rows over a weight packed once (a decode step's)
// run each chunk of panels through all of K; A for all of K stays in L2.
constexpr int64_t kWholePanelRows = 32;

/** One instruction set's tile: its shape and its functions by row count (1..MR), for f32 and bf16 B. */
struct Kernel {
  int mr, nr;
  const TileFn* tiles;
  const gemm_tile::WideTile* wide;  // [rows] for rows 1 and 2
  const TileFn* bf16_tiles;
  const gemm_tile::WideTile* bf16_wide;
};

Kernel kernel_for(Isa isa) {
  using namespace gemm_tile;
#ifdef OT_AVX2
  if (uses_avx512(isa)) return {kAvx512MR, kAvx512NR, kAvx512Tiles, kAvx512Wide, kAvx512Bf16Tiles, kAvx512Bf16Wide};
  return {kAvx2MR, kAvx2NR, kAvx2Tiles, kAvx2Wide, kAvx2Bf16Tiles, kAvx2Bf16Wide};
#else
  (void)isa;
  return {kPortableMR, kPortableNR, kPortableTiles, kPortableWide, kPortableBf16Tiles, kPortableWide};
#endif
}

// Pack buffers grow once to their largest size and are reused: no allocation in
// steady state. Thread-local, so concurrent callers never share one.
float* scratch(std::vector<float>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

/** Rows [i0, i0+rows) of op(A), K block [pc, pc+kc) → MR-row panels, k-major, times alpha. */
void pack_a(const GemmArgs& g, int mr, int64_t i0, int64_t rows, int64_t pc, int64_t kc, float* out) {
  for (int64_t panel = 0; panel < rows; panel += mr) {
    const int64_t n_rows = std::min<int64_t>(mr, rows - panel);
    float* dst = out + panel * kc;
    if (g.trans_a) {
      // A stored [k, m]: each step of k is n_rows contiguous floats.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.a + (pc + p) * g.lda + i0 + panel;
        for (int64_t r = 0; r < n_rows; ++r) dst[p * mr + r] = g.alpha * src[r];
      }
      continue;
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* src = g.a + (i0 + panel + r) * g.lda + pc;
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = g.alpha * src[p];
    }
  }
}

#ifdef OT_AVX2
/** Transposes the 8×8 block r[0..8) in place (r[q] becomes column q). */
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}
#endif

/**
 * Columns [j, j+cols) of op(B) for B stored [n, k] (rows of a weight matrix), K
 * block [pc, pc+kc) → one NR-column panel dst[p·nr + c], zero-padded: 8×8
 * transposes in registers, a full row of the panel written at a time.
 */
void pack_b_rows(const GemmArgs& g, int nr, int64_t j, int64_t cols, int64_t pc, int64_t kc, float* dst) {
  const int64_t groups = cols / 8;  // full groups of 8 columns
  int64_t vector_k = 0;
#ifdef OT_AVX2
  vector_k = kc / 8 * 8;
  // 16 columns (a cache line of the panel's row) at a time: 16 source streams.
  for (int64_t h = 0; h < groups * 8; h += 16) {
    const int64_t h1 = std::min(groups * 8, h + 16);
    for (int64_t p = 0; p < vector_k; p += 8) {
      for (int64_t c0 = h; c0 < h1; c0 += 8) {
        __m256 r[8];
        for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(g.b + (j + c0 + q) * g.ldb + pc + p);
        transpose8(r);
        for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * nr + c0, r[q]);
      }
    }
  }
#endif
  for (int64_t p = vector_k; p < kc; ++p)
    for (int64_t c = 0; c < groups * 8; ++c) dst[p * nr + c] = g.b[(j + c) * g.ldb + pc + p];
  // The columns past the last full group: a partial group and the zero padding.
  for (int64_t c = groups * 8; c < nr; ++c) {
    const float* src = g.b + (j + c) * g.ldb + pc;
    for (int64_t q = 0; q < kc; ++q) dst[q * nr + c] = c < cols ? src[q] : 0.0f;
  }
}

/** Columns [j0, j0+cols) of op(B), K block [pc, pc+kc) → NR-column panels, k-major, zero-padded. */
void pack_b(const GemmArgs& g, int nr, int64_t j0, int64_t cols, int64_t pc, int64_t kc, float* out) {
  for (int64_t panel = 0; panel < cols; panel += nr) {
    const int64_t n_cols = std::min<int64_t>(nr, cols - panel);
    const int64_t j = j0 + panel;
    float* dst = out + panel * kc;
    if (g.trans_b) {
      pack_b_rows(g, nr, j, n_cols, pc, kc, dst);
      continue;
    }
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = g.b + (pc + p) * g.ldb + j;
      float* d = dst + p * nr;
      std::copy(src, src + n_cols, d);
      std::fill(d + n_cols, d + nr, 0.0f);
    }
  }
}

struct Plan {
  const GemmArgs* g;
  Kernel kernel;
  int64_t col_tasks, cols_per_task;  // multiple of nr
  int64_t row_tasks, rows_per_task;  // multiple of mr
  // B already in panels (pack_weight's layout, f32 or bf16), or both nullptr: pack op(B) per call.
  const float* prepacked;
  const uint16_t* prepacked16;
};

/** One task: rows [i0, i0 + rows) × columns [j0, j1) of C. */
struct Task {
  int64_t i0, rows, j0, j1;
  int64_t chunk;  // columns of B per chunk, a multiple of nr
};

Task task_of(const Plan& plan, int64_t task) {
  const GemmArgs& g = *plan.g;
  const int nr = plan.kernel.nr;
  const int64_t i0 = (task % plan.row_tasks) * plan.rows_per_task;
  const int64_t i1 = std::min(g.m, i0 + plan.rows_per_task);
  const int64_t j0 = (task / plan.row_tasks) * plan.cols_per_task;
  const int64_t j1 = std::min(g.n, j0 + plan.cols_per_task);
  // Equal chunks of at most kChunkCols (a short last chunk would reuse each A panel little).
  const int64_t panels = (j1 - j0 + nr - 1) / nr;
  const int64_t max_panels = std::max<int64_t>(1, kChunkCols / nr);
  const int64_t n_chunks = (panels + max_panels - 1) / max_panels;
  return {i0, i1 - i0, j0, j1, (panels + n_chunks - 1) / n_chunks * nr};
}

/**
 * The task's columns [jc, jc + cols) over K block [pc, pc + kc), with its rows of
 * A already packed for that block at ap; packs that part of B first unless the
 * weight was packed once.
 */
void run_block(const Plan& plan, const Task& t, int64_t pc, int64_t jc, const float* ap, float* bp) {
  const GemmArgs& g = *plan.g;
  const int mr = plan.kernel.mr, nr = plan.kernel.nr;
  const int64_t kc = std::min(KC, g.k - pc);
  const int64_t cols = std::min(t.chunk, t.j1 - jc);
  const Store store = pc > 0 || g.beta == 1.0f ? Store::Accumulate
                      : g.beta == 0.0f         ? Store::Overwrite
                                               : Store::ScaleBeta;
  // The chunk's first panel for this K block (f32 or bf16), and the elements from one panel to the next.
  const float* panels = bp;
  const uint16_t* panels16 = nullptr;
  int64_t stride = nr * kc;
  const int64_t at = (jc / nr) * nr * g.k + pc * nr;
  if (plan.prepacked) {
    panels = plan.prepacked + at;
    stride = nr * g.k;
  } else if (plan.prepacked16) {
    panels = nullptr;
    panels16 = plan.prepacked16 + at;
    stride = nr * g.k;
  } else {
    pack_b(g, nr, jc, cols, pc, kc, bp);
  }
  const TileFn* tiles = panels16 ? plan.kernel.bf16_tiles : plan.kernel.tiles;
  const gemm_tile::WideTile* wides = panels16 ? plan.kernel.bf16_wide : plan.kernel.wide;
  const auto args = [&](int64_t ir, int64_t jr, int n_cols) {
    const int64_t offset = jr / nr * stride;
    return TileArgs{kc,
                    ap + ir * kc,
                    panels ? panels + offset : nullptr,
                    panels16 ? panels16 + offset : nullptr,
                    stride,
                    g.c + (t.i0 + ir) * g.ldc + jc + jr,
                    g.ldc,
                    n_cols,
                    store,
                    g.beta};
  };
  for (int64_t ir = 0; ir < t.rows; ir += mr) {
    const int r = static_cast<int>(std::min<int64_t>(mr, t.rows - ir));
    int64_t jr = 0;
    if (r <= 2 && wides[r].fn) {
      const gemm_tile::WideTile wide = wides[r];
      const int64_t span = wide.panels * nr;
      for (; jr + span <= cols; jr += span) wide.fn(args(ir, jr, static_cast<int>(span)));
    }
    const TileFn tile = tiles[r];
    for (; jr < cols; jr += nr) tile(args(ir, jr, static_cast<int>(std::min<int64_t>(nr, cols - jr))));
  }
}

/**
 * A task runs every K block in order for each of its elements, so the sums do
 * not depend on the loop order. Usually K blocks are the outer loop (A packed
 * one block at a time, each B chunk packed once per block). A decode-sized task
 * over a weight packed once (at most kWholePanelRows rows) instead packs A for
 * all of K first and runs each chunk of panels through all of K before the
 * next: each panel then streams from memory in one piece rather than one piece
 * per K block (Qwen-shaped lm_head, AVX-512: 1 row 50 → 61 GB/s f32, 41 → 59
 * bf16; 16 rows 25 → 34 f32).
 */
void run_task(const Plan& plan, int64_t task) {
  thread_local std::vector<float> a_buffer, b_buffer;
  const GemmArgs& g = *plan.g;
  const int mr = plan.kernel.mr;
  const Task t = task_of(plan, task);
  if (t.rows <= 0 || t.j0 >= t.j1) return;
  const int64_t padded_rows = (t.rows + mr - 1) / mr * mr;
  const bool whole_panels = (plan.prepacked || plan.prepacked16) && t.rows <= kWholePanelRows;
  float* ap = scratch(a_buffer, static_cast<size_t>(padded_rows * (whole_panels ? g.k : std::min(KC, g.k))));
  float* bp = plan.prepacked || plan.prepacked16 ? nullptr
                                                 : scratch(b_buffer, static_cast<size_t>(t.chunk * std::min(KC, g.k)));
  if (whole_panels) {
    for (int64_t pc = 0; pc < g.k; pc += KC)
      pack_a(g, mr, t.i0, t.rows, pc, std::min(KC, g.k - pc), ap + padded_rows * pc);
    for (int64_t jc = t.j0; jc < t.j1; jc += t.chunk)
      for (int64_t pc = 0; pc < g.k; pc += KC) run_block(plan, t, pc, jc, ap + padded_rows * pc, bp);
    return;
  }
  for (int64_t pc = 0; pc < g.k; pc += KC) {
    pack_a(g, mr, t.i0, t.rows, pc, std::min(KC, g.k - pc), ap);
    for (int64_t jc = t.j0; jc < t.j1; jc += t.chunk) run_block(plan, t, pc, jc, ap, bp);
  }
}

/**
 * Over a weight packed once, each column task packs all its rows of A again, and
 * each row task streams all its columns of B again: the split that moves the
 * fewest floats (packing reads and writes each of A's, 2·m per column task;
 * streaming reads B's, n per row task). A prefill's products (512 rows through
 * a 128-column k projection) pack A once instead of four times; a decode step
 * (few rows) still streams each weight once. The split never changes the sums.
 */
void split_for_packed_weight(int64_t m, int64_t n, int64_t want, int64_t row_panels, int64_t panels,
                             int64_t& row_tasks, int64_t& col_tasks) {
  const auto cost = [&](int64_t rows, int64_t cols) { return 2 * m * cols + n * rows; };
  for (int64_t rows = row_tasks + 1; rows <= std::min(want, row_panels); ++rows) {
    const int64_t cols = std::min(panels, (want + rows - 1) / rows);
    if (cost(rows, cols) < cost(row_tasks, col_tasks)) {
      row_tasks = rows;
      col_tasks = cols;
    }
  }
}

/** The product over B packed per call (prepacked both null) or once (pack_weight's layouts). */
void run_packed(const GemmArgs& g, const float* prepacked, const uint16_t* prepacked16) {
  const Kernel kernel = kernel_for(active_isa());
  const int64_t threads = num_threads();
  // About two tasks per thread (a loaded core then delays less), split over the
  // columns first; over the rows too when there are few column panels.
  // A task's packed A ([rows × KC]) should stay in L2: tall products split their
  // rows into blocks of at most kTaskRows first.
  const int64_t want = threads > 1 ? threads * 2 : 1;
  const int64_t panels = (g.n + kernel.nr - 1) / kernel.nr;
  const int64_t row_panels = (g.m + kernel.mr - 1) / kernel.mr;
  const int64_t min_row_tasks = (g.m + kTaskRows - 1) / kTaskRows;
  int64_t col_tasks = std::min(panels, (want + min_row_tasks - 1) / min_row_tasks);
  int64_t row_tasks = std::min(row_panels, std::max(min_row_tasks, (want + col_tasks - 1) / col_tasks));
  if (prepacked || prepacked16) split_for_packed_weight(g.m, g.n, want, row_panels, panels, row_tasks, col_tasks);
  Plan plan{&g, kernel, 0, 0, 0, 0, prepacked, prepacked16};
  plan.cols_per_task = (panels + col_tasks - 1) / col_tasks * kernel.nr;
  plan.col_tasks = (g.n + plan.cols_per_task - 1) / plan.cols_per_task;
  plan.rows_per_task = (row_panels + row_tasks - 1) / row_tasks * kernel.mr;
  plan.row_tasks = (g.m + plan.rows_per_task - 1) / plan.rows_per_task;
  parallel_for(plan.col_tasks * plan.row_tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) run_task(plan, t);
  });
}

}  // namespace

void gemm_packed(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.0f) return gemm_scale_c(g);
  run_packed(g, nullptr, nullptr);
}

int packed_weight_nr() { return kernel_for(active_isa()).nr; }

int64_t packed_weight_floats(int64_t n, int64_t k) {
  const int64_t nr = packed_weight_nr();
  return (n + nr - 1) / nr * nr * k;
}

void pack_weight(const float* w, int64_t n, int64_t k, float* out) {
  const int nr = packed_weight_nr();
  GemmArgs g = gemm_args(false, true, 0, n, k, 1.0f, nullptr, 0, w, k, 0.0f, nullptr, 0);
  const int64_t panels = (n + nr - 1) / nr;
  parallel_for(panels, grain_for(panels), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t cols = std::min<int64_t>(nr, n - p * nr);
      for (int64_t pc = 0; pc < k; pc += KC) {
        pack_b_rows(g, nr, p * nr, cols, pc, std::min(KC, k - pc), out + p * nr * k + pc * nr);
      }
    }
  });
}

void gemm_prepacked(int64_t m, int64_t n, int64_t k, const float* x, const float* packed, bool accumulate,
                    float* y) {
  if (m == 0 || n == 0) return;
  const GemmArgs g = gemm_args(false, true, m, n, k, 1.0f, x, k, nullptr, k, accumulate ? 1.0f : 0.0f, y, n);
  if (k == 0) return gemm_scale_c(g);
  run_packed(g, packed, nullptr);
}

int packed_weight_bf16_nr() { return active_isa() == Isa::Amx ? kAmxPanelColumns : packed_weight_nr(); }

int64_t packed_weight_bf16_elements(int64_t n, int64_t k) {
  return active_isa() == Isa::Amx ? amx_packed_elements(n, k) : packed_weight_floats(n, k);
}

void pack_weight_bf16(const uint16_t* w, int64_t n, int64_t k, uint16_t* out) {
  if (active_isa() == Isa::Amx) return amx_pack_weight(w, n, k, out);
  const int64_t nr = packed_weight_nr(), half = nr / 2;
  const int64_t panels = (n + nr - 1) / nr;
  parallel_for(panels, grain_for(panels), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint16_t* panel = out + p * nr * k;
      // Slot 2l of a row holds column l, slot 2l + 1 column l + nr/2: one 32-bit lane
      // widens (shift, mask) into the two halves of the panel's row.
      for (int64_t c = 0; c < nr; ++c) {
        const int64_t j = p * nr + c;
        const int64_t slot = c < half ? 2 * c : 2 * (c - half) + 1;
        const uint16_t* src = j < n ? w + j * k : nullptr;
        for (int64_t q = 0; q < k; ++q) panel[q * nr + slot] = src ? src[q] : 0;
      }
    }
  });
}

void gemm_prepacked_bf16(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* packed, bool accumulate,
                         float* y) {
  if (m == 0 || n == 0) return;
  const GemmArgs g = gemm_args(false, true, m, n, k, 1.0f, x, k, nullptr, k, accumulate ? 1.0f : 0.0f, y, n);
  if (k == 0) return gemm_scale_c(g);
  if (active_isa() == Isa::Amx) return amx_gemm_prepacked(m, n, k, x, packed, accumulate, y);
  run_packed(g, nullptr, packed);
}

void gemm_own(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.0f) return gemm_scale_c(g);
  // As the op without OpenBLAS: decode-sized x·Wᵀ by the dot tiles.
  if (!g.trans_a && g.trans_b && g.m <= kSmallM) return gemm_nt_small(g);
  gemm_packed(g);
}

void gemm_rows(const GemmArgs& g) { gemm_packed(g); }

}  // namespace ot
