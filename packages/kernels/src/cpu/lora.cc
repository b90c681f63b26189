#include "lora.h"

#include <algorithm>
#include <vector>

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
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  int64_t q = 0;
  for (; q + 8 <= r; q += 8) {
    const __m256 tv = _mm256_loadu_ps(t + q);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(b + j * r + q), tv, acc[j]);
  }
  if (q < r) {
    alignas(32) int32_t mask_bits[8];
    for (int j = 0; j < 8; ++j) mask_bits[j] = q + j < r ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(mask_bits));
    const __m256 tv = _mm256_maskload_ps(t + q, mask);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_maskload_ps(b + j * r + q, mask), tv, acc[j]);
  }
  const __m256 t01 = _mm256_hadd_ps(acc[0], acc[1]);
  const __m256 t23 = _mm256_hadd_ps(acc[2], acc[3]);
  const __m256 t45 = _mm256_hadd_ps(acc[4], acc[5]);
  const __m256 t67 = _mm256_hadd_ps(acc[6], acc[7]);
  const __m256 t0123 = _mm256_hadd_ps(t01, t23);
  const __m256 t4567 = _mm256_hadd_ps(t45, t67);
  const __m256 lo = _mm256_permute2f128_ps(t0123, t4567, 0x20);
  const __m256 hi = _mm256_permute2f128_ps(t0123, t4567, 0x31);
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), _mm256_add_ps(lo, hi)));
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

struct Task {
  int32_t slot;
  int64_t begin, end;  // into Groups::order
};

// Rows per forward task: enough to amortise B's reads, small enough to spread work.
constexpr int64_t kForwardRowsPerTask = 16;

}  // namespace

void lora_forward(const LoraShape& s, const float* x, const int32_t* slots, const LoraAdapter* table, int64_t count,
                  float* y) {
  thread_local Groups groups;
  thread_local std::vector<Task> tasks;
  group_rows(slots, s.n, count, groups);
  tasks.clear();
  for (int64_t a = 0; a < count; ++a) {
    for (int64_t b = groups.offsets[static_cast<size_t>(a)]; b < groups.offsets[static_cast<size_t>(a + 1)];
         b += kForwardRowsPerTask) {
      tasks.push_back({static_cast<int32_t>(a), b, std::min(b + kForwardRowsPerTask, groups.offsets[static_cast<size_t>(a + 1)])});
    }
  }
  const int32_t* order = groups.order.data();
  const Task* task_list = tasks.data();
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> t_buffer;
    for (int64_t t = t0; t < t1; ++t) {
      const Task& task = task_list[t];
      const LoraAdapter& ad = table[task.slot];
      if (t_buffer.size() < static_cast<size_t>(ad.rank)) t_buffer.resize(static_cast<size_t>(ad.rank));
      float* tv = t_buffer.data();  // [rank]
      for (int64_t k = task.begin; k < task.end; ++k) {
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
  thread_local std::vector<float> u_buffer, du_buffer;
  group_rows(slots, s.n, count, groups);
  // Groups run one after another (parallel inside), so gradient buffers shared by
  // two slots are still accumulated without races.
  for (int64_t a = 0; a < count; ++a) {
    const int64_t begin = groups.offsets[static_cast<size_t>(a)];
    const int64_t rows = groups.offsets[static_cast<size_t>(a + 1)] - begin;
    if (rows == 0) continue;
    const LoraAdapter& ad = table[a];
    const LoraGrad& gr = grads[a];
    const int64_t r = ad.rank;
    const int32_t* order = groups.order.data() + begin;
    if (u_buffer.size() < static_cast<size_t>(rows * r)) {
      u_buffer.resize(static_cast<size_t>(rows * r));
      du_buffer.resize(static_cast<size_t>(rows * r));
    }
    float* u = u_buffer.data();    // [rows, r]: X·Aᵀ
    float* du = du_buffer.data();  // [rows, r]: s · dY·B
    parallel_for(rows, grain_for(rows), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* xr = x + order[i] * s.d_in;
        const float* dyr = dy + order[i] * s.d_out;
        float* ui = u + i * r;
        float* dui = du + i * r;
        for (int64_t q = 0; q < r; ++q) {
          ui[q] = dot(xr, ad.a + q * s.d_in, s.d_in);
          dui[q] = 0.0f;
        }
        for (int64_t o = 0; o < s.d_out; ++o) axpy(ad.scale * dyr[o], ad.b + o * r, dui, r);
      }
    });
    // dB[o, :] += s · Σ_i dY[i, o] · U[i, :]
    parallel_for(s.d_out, grain_for(s.d_out), [&](int64_t o0, int64_t o1) {
      for (int64_t i = 0; i < rows; ++i) {
        const float* dyr = dy + order[i] * s.d_out;
        for (int64_t o = o0; o < o1; ++o) axpy(ad.scale * dyr[o], u + i * r, gr.db + o * r, r);
      }
    });
    // dA[q, :] += Σ_i dU[i, q] · X[i, :]   and   dX[i, :] += Σ_q dU[i, q] · A[q, :]
    constexpr int64_t kColumns = 256;
    const int64_t column_blocks = (s.d_in + kColumns - 1) / kColumns;
    parallel_for(column_blocks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t d0 = c * kColumns;
        const int64_t width = std::min(kColumns, s.d_in - d0);
        for (int64_t i = 0; i < rows; ++i) {
          const float* xr = x + order[i] * s.d_in + d0;
          for (int64_t q = 0; q < r; ++q) axpy(du[i * r + q], xr, gr.da + q * s.d_in + d0, width);
          if (dx) {
            float* dxr = dx + order[i] * s.d_in + d0;
            for (int64_t q = 0; q < r; ++q) axpy(du[i * r + q], ad.a + q * s.d_in + d0, dxr, width);
          }
        }
      }
    });
  }
}

}  // namespace ot
