#include "lora.h"

#include <algorithm>
#include <vector>

#include "gemm.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

/** Rows grouped by slot: order[offsets[a] .. offsets[a+1]) are adapter a's rows. */
struct Groups {
  std::vector<int32_t> order;
  std::vector<int64_t> offsets;
  std::vector<int64_t> cursor;
};

/** A counting sort of row indices by slot; rows with slot -1 are left out. */
void group_rows(const int32_t* slots, int64_t n, int64_t count, Groups& g) {
  g.offsets.assign(static_cast<size_t>(count + 1), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] >= 0) g.offsets[static_cast<size_t>(slots[i] + 1)]++;
  }
  for (int64_t a = 0; a < count; ++a) g.offsets[static_cast<size_t>(a + 1)] += g.offsets[static_cast<size_t>(a)];
  g.cursor.assign(g.offsets.begin(), g.offsets.end());
  g.order.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] >= 0) g.order[static_cast<size_t>(g.cursor[static_cast<size_t>(slots[i])]++)] = static_cast<int32_t>(i);
  }
}

/** out[0..8) += the 8 dot products of t[0..r) with rows b[o..o+8) of a [.., r] matrix. */
inline void dot8(const float* t, const float* b, int64_t r, float* out) {
#ifdef OT_AVX2
  const __m256 sums = dot8_lanes(t, [b, r](int j) { return b + j * r; }, r);
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), sums));
#else
  for (int j = 0; j < 8; ++j) out[j] += dot(t, b + j * r, r);
#endif
}

/** y[0..d_out) += t[0..r) · Bᵀ for B [d_out, r]. */
inline void add_t_bt(const float* t, const float* b, int64_t r, int64_t d_out, float* y) {
  int64_t o = 0;
  for (; o + 8 <= d_out; o += 8) dot8(t, b + o * r, r, y + o);
  for (; o < d_out; ++o) y[o] += dot(t, b + o * r, r);
}

/** The same as dot8 for two rows t0, t1 sharing every load of b. */
inline void dot8x2(const float* t0, const float* t1, const float* b, int64_t r, float* out0, float* out1) {
#ifdef OT_AVX2
  if (r % 8 == 0) {
    __m256 acc0[8], acc1[8];
    for (int j = 0; j < 8; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
    for (int64_t q = 0; q < r; q += 8) {
      const __m256 v0 = _mm256_loadu_ps(t0 + q);
      const __m256 v1 = _mm256_loadu_ps(t1 + q);
      for (int j = 0; j < 8; ++j) {
        const __m256 bv = _mm256_loadu_ps(b + j * r + q);
        acc0[j] = _mm256_fmadd_ps(bv, v0, acc0[j]);
        acc1[j] = _mm256_fmadd_ps(bv, v1, acc1[j]);
      }
    }
    for (int row = 0; row < 2; ++row) {
      float* out = row == 0 ? out0 : out1;
      _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), hsum8(row == 0 ? acc0 : acc1)));
    }
    return;
  }
#endif
  dot8(t0, b, r, out0);
  dot8(t1, b, r, out1);
}

/** dot(x0, a) and dot(x1, a) sharing the loads of a. */
inline void dot_x2(const float* x0, const float* x1, const float* a, int64_t n, float* s0, float* s1) {
  int64_t i = 0;
  float r0 = 0.0f, r1 = 0.0f;
#ifdef OT_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 av = _mm256_loadu_ps(a + i);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + i), av, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + i), av, a1);
  }
  alignas(32) float b0[8], b1[8];
  _mm256_store_ps(b0, a0);
  _mm256_store_ps(b1, a1);
  for (int j = 0; j < 8; ++j) {
    r0 += b0[j];
    r1 += b1[j];
  }
#endif
  for (; i < n; ++i) {
    r0 += x0[i] * a[i];
    r1 += x1[i] * a[i];
  }
  *s0 = r0;
  *s1 = r1;
}

/** Two rows of one adapter: y_i += s · (x_i·Aᵀ)·Bᵀ, every weight load shared by both rows. */
void lora_rows_x2(const LoraShape& s, const LoraAdapter& ad, const float* x0, const float* x1, float* t0, float* t1,
                  float* y0, float* y1) {
  for (int64_t q = 0; q < ad.rank; ++q) {
    dot_x2(x0, x1, ad.a + q * s.d_in, s.d_in, t0 + q, t1 + q);
    t0[q] *= ad.scale;
    t1[q] *= ad.scale;
  }
  int64_t o = 0;
  for (; o + 8 <= s.d_out; o += 8) dot8x2(t0, t1, ad.b + o * ad.rank, ad.rank, y0 + o, y1 + o);
  for (; o < s.d_out; ++o) {
    y0[o] += dot(t0, ad.b + o * ad.rank, ad.rank);
    y1[o] += dot(t1, ad.b + o * ad.rank, ad.rank);
  }
}

struct Task {
  int32_t slot;
  int64_t begin, end;  // into Groups::order
};

// Rows per forward task: enough to amortise B's reads, small enough to spread work.
constexpr int64_t kForwardRowsPerTask = 16;
// Groups with at least this many rows go through GEMMs (gathered when scattered).
constexpr int64_t kGemmRows = 48;

/** A group's rows as a matrix: a view when they are consecutive rows, else a gathered copy. */
struct RowBlock {
  const float* data;
  bool contiguous;
};

bool consecutive(const int32_t* rows, int64_t count) {
  for (int64_t i = 1; i < count; ++i) {
    if (rows[i] != rows[0] + i) return false;
  }
  return true;
}

RowBlock gather(const float* src, int64_t width, const int32_t* rows, int64_t count, std::vector<float>& scratch) {
  if (consecutive(rows, count)) return {src + static_cast<int64_t>(rows[0]) * width, true};
  if (scratch.size() < static_cast<size_t>(count * width)) scratch.resize(static_cast<size_t>(count * width));
  float* out = scratch.data();
  parallel_for(count, grain_for(count), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) std::copy_n(src + static_cast<int64_t>(rows[i]) * width, width, out + i * width);
  });
  return {out, false};
}

void scatter_add(const float* block, int64_t width, const int32_t* rows, int64_t count, float* dst) {
  parallel_for(count, grain_for(count), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) axpy(1.0f, block + i * width, dst + static_cast<int64_t>(rows[i]) * width, width);
  });
}

/** One large group through GEMMs: U = X·Aᵀ, then Y += s·U·Bᵀ. */
void forward_group_gemm(const LoraShape& s, const float* x, const int32_t* rows, int64_t count, const LoraAdapter& ad,
                        float* y) {
  thread_local std::vector<float> x_scratch, u_scratch, y_scratch;
  const int64_t r = ad.rank;
  const RowBlock xg = gather(x, s.d_in, rows, count, x_scratch);
  if (u_scratch.size() < static_cast<size_t>(count * r)) u_scratch.resize(static_cast<size_t>(count * r));
  float* u = u_scratch.data();  // [count, r]
  gemm(gemm_args(false, true, count, r, s.d_in, 1.0f, xg.data, s.d_in, ad.a, s.d_in, 0.0f, u, r));
  if (xg.contiguous) {
    gemm(gemm_args(false, true, count, s.d_out, r, ad.scale, u, r, ad.b, r, 1.0f, y + rows[0] * s.d_out, s.d_out));
    return;
  }
  if (y_scratch.size() < static_cast<size_t>(count * s.d_out)) y_scratch.resize(static_cast<size_t>(count * s.d_out));
  gemm(gemm_args(false, true, count, s.d_out, r, ad.scale, u, r, ad.b, r, 0.0f, y_scratch.data(), s.d_out));
  scatter_add(y_scratch.data(), s.d_out, rows, count, y);
}

}  // namespace

void lora_forward(const LoraShape& s, const float* x, const int32_t* slots, const LoraAdapter* table, int64_t count,
                  float* y, bool row_invariant) {
  thread_local Groups groups;
  thread_local std::vector<Task> tasks;
  group_rows(slots, s.n, count, groups);
  tasks.clear();
  for (int64_t a = 0; a < count; ++a) {
    const int64_t begin = groups.offsets[static_cast<size_t>(a)];
    const int64_t end = groups.offsets[static_cast<size_t>(a + 1)];
    if (!row_invariant && end - begin >= kGemmRows) {
      // Large groups (prefill, training) one at a time, each GEMM using every core.
      forward_group_gemm(s, x, groups.order.data() + begin, end - begin, table[a], y);
      continue;
    }
    for (int64_t b = begin; b < end; b += kForwardRowsPerTask) {
      tasks.push_back({static_cast<int32_t>(a), b, std::min(b + kForwardRowsPerTask, end)});
    }
  }
  // Small groups (decode rows of many adapters) together, a task per few rows.
  const int32_t* order = groups.order.data();
  const Task* task_list = tasks.data();
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> t_buffer;
    for (int64_t t = t0; t < t1; ++t) {
      const Task& task = task_list[t];
      const LoraAdapter& ad = table[task.slot];
      if (t_buffer.size() < static_cast<size_t>(2 * ad.rank)) t_buffer.resize(static_cast<size_t>(2 * ad.rank));
      float* tv = t_buffer.data();  // [2, rank]
      int64_t k = task.begin;
      for (; !row_invariant && k + 2 <= task.end; k += 2) {
        const int64_t r0 = order[k], r1 = order[k + 1];
        lora_rows_x2(s, ad, x + r0 * s.d_in, x + r1 * s.d_in, tv, tv + ad.rank, y + r0 * s.d_out, y + r1 * s.d_out);
      }
      for (; k < task.end; ++k) {
        const int64_t row = order[k];
        const float* xr = x + row * s.d_in;
        for (int64_t q = 0; q < ad.rank; ++q) tv[q] = ad.scale * dot(xr, ad.a + q * s.d_in, s.d_in);
        add_t_bt(tv, ad.b, ad.rank, s.d_out, y + row * s.d_out);
      }
    }
  });
}

void lora_backward(const LoraShape& s, const float* x, const float* dy, const int32_t* slots, const LoraAdapter* table,
                   int64_t count, float* dx, const LoraGrad* grads) {
  thread_local Groups groups;
  thread_local std::vector<float> x_scratch, dy_scratch, u_scratch, du_scratch, dx_scratch;
  group_rows(slots, s.n, count, groups);
  // Groups run one after another (each GEMM in parallel), so gradient buffers
  // shared by two slots still accumulate without races.
  for (int64_t a = 0; a < count; ++a) {
    const int64_t begin = groups.offsets[static_cast<size_t>(a)];
    const int64_t rows = groups.offsets[static_cast<size_t>(a + 1)] - begin;
    if (rows == 0) continue;
    const LoraAdapter& ad = table[a];
    const LoraGrad& gr = grads[a];
    const int64_t r = ad.rank;
    const int32_t* order = groups.order.data() + begin;
    const RowBlock xg = gather(x, s.d_in, order, rows, x_scratch);
    const RowBlock dyg = gather(dy, s.d_out, order, rows, dy_scratch);
    if (u_scratch.size() < static_cast<size_t>(rows * r)) {
      u_scratch.resize(static_cast<size_t>(rows * r));
      du_scratch.resize(static_cast<size_t>(rows * r));
    }
    float* u = u_scratch.data();    // [rows, r] = X·Aᵀ
    float* du = du_scratch.data();  // [rows, r] = s · dY·B
    gemm(gemm_args(false, true, rows, r, s.d_in, 1.0f, xg.data, s.d_in, ad.a, s.d_in, 0.0f, u, r));
    gemm(gemm_args(false, false, rows, r, s.d_out, ad.scale, dyg.data, s.d_out, ad.b, r, 0.0f, du, r));
    // dB += s · dYᵀ·U,  dA += dUᵀ·X
    gemm(gemm_args(true, false, s.d_out, r, rows, ad.scale, dyg.data, s.d_out, u, r, 1.0f, gr.db, r));
    gemm(gemm_args(true, false, r, s.d_in, rows, 1.0f, du, r, xg.data, s.d_in, 1.0f, gr.da, s.d_in));
    if (!dx) continue;
    // dX += dU·A
    if (xg.contiguous) {
      gemm(gemm_args(false, false, rows, s.d_in, r, 1.0f, du, r, ad.a, s.d_in, 1.0f, dx + order[0] * s.d_in, s.d_in));
    } else {
      if (dx_scratch.size() < static_cast<size_t>(rows * s.d_in)) dx_scratch.resize(static_cast<size_t>(rows * s.d_in));
      gemm(gemm_args(false, false, rows, s.d_in, r, 1.0f, du, r, ad.a, s.d_in, 0.0f, dx_scratch.data(), s.d_in));
      scatter_add(dx_scratch.data(), s.d_in, order, rows, dx);
    }
  }
}

}  // namespace ot
