// RMSNorm (Llama / Qwen2): forward over rows in parallel; the backward's input
// gradient is row-parallel and its weight gradient column-parallel, so no two
// threads ever add into the same element.
#include <algorithm>
#include <cmath>
#include <vector>

#include "elementwise.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

inline float inv_rms_of(const float* x, int64_t d, float eps) {
  const double mean_square = static_cast<double>(dot(x, x, d)) / static_cast<double>(d);
  return static_cast<float>(1.0 / std::sqrt(mean_square + static_cast<double>(eps)));
}

/** y[0..d) = x · r · w. */
inline void scale_row(const float* x, const float* w, float r, int64_t d, float* y) {
  int64_t k = 0;
#ifdef OT_AVX2
  const __m256 vr = _mm256_set1_ps(r);
  for (; k + 8 <= d; k += 8) {
    _mm256_storeu_ps(y + k, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k), vr), _mm256_loadu_ps(w + k)));
  }
#endif
  for (; k < d; ++k) y[k] = x[k] * r * w[k];
}

/** Σ_k g_k · w_k · x_k. */
inline float weighted_dot(const float* g, const float* w, const float* x, int64_t d) {
  int64_t k = 0;
  float sum = 0.0f;
#ifdef OT_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; k + 8 <= d; k += 8) {
    acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(g + k), _mm256_loadu_ps(w + k)), _mm256_loadu_ps(x + k), acc);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float lane : lanes) sum += lane;
#endif
  for (; k < d; ++k) sum += g[k] * w[k] * x[k];
  return sum;
}

/** dx[0..d) (=|+=) r·w·g − c·x. */
inline void input_grad_row(const float* g, const float* w, const float* x, float r, float c, int64_t d, float* dx,
                           bool accumulate) {
  int64_t k = 0;
#ifdef OT_AVX2
  const __m256 vr = _mm256_set1_ps(r), vc = _mm256_set1_ps(c);
  for (; k + 8 <= d; k += 8) {
    __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(g + k), _mm256_loadu_ps(w + k)), vr);
    v = _mm256_fnmadd_ps(vc, _mm256_loadu_ps(x + k), v);
    if (accumulate) v = _mm256_add_ps(v, _mm256_loadu_ps(dx + k));
    _mm256_storeu_ps(dx + k, v);
  }
#endif
  for (; k < d; ++k) {
    const float v = g[k] * w[k] * r - c * x[k];
    dx[k] = accumulate ? dx[k] + v : v;
  }
}

/** dw[0..width) += Σ_i g[i]·x[i]·r_i, rows of stride d. */
inline void weight_grad_columns(const float* g, const float* x, const float* r, int64_t n, int64_t d, int64_t width,
                                float* dw) {
  for (int64_t i = 0; i < n; ++i) {
    const float* gi = g + i * d;
    const float* xi = x + i * d;
    int64_t k = 0;
#ifdef OT_AVX2
    const __m256 vr = _mm256_set1_ps(r[i]);
    for (; k + 8 <= width; k += 8) {
      const __m256 gx = _mm256_mul_ps(_mm256_loadu_ps(gi + k), _mm256_loadu_ps(xi + k));
      _mm256_storeu_ps(dw + k, _mm256_fmadd_ps(gx, vr, _mm256_loadu_ps(dw + k)));
    }
#endif
    for (; k < width; ++k) dw[k] += gi[k] * xi[k] * r[i];
  }
}

// Columns per weight-gradient task: two cache lines of dw, long runs of g and x.
constexpr int64_t kWeightColumns = 64;

}  // namespace

void rmsnorm_forward(int64_t n, int64_t d, const float* x, const float* w, float eps, float* out, float* inv_rms) {
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float r = inv_rms_of(x + i * d, d, eps);
      if (inv_rms) inv_rms[i] = r;
      scale_row(x + i * d, w, r, d, out + i * d);
    }
  });
}

void rmsnorm_backward(int64_t n, int64_t d, const float* x, const float* w, const float* inv_rms, float eps,
                      const float* d_out, float* dx, bool accumulate, float* dw) {
  thread_local std::vector<float> r_buffer;
  const float* r = inv_rms;
  if (!r) {
    if (r_buffer.size() < static_cast<size_t>(n)) r_buffer.resize(static_cast<size_t>(n));
    r = r_buffer.data();
  }
  float* r_fill = inv_rms ? nullptr : r_buffer.data();
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* xi = x + i * d;
      const float* gi = d_out + i * d;
      float ri = r_fill ? (r_fill[i] = inv_rms_of(xi, d, eps)) : r[i];
      const float c = ri * ri * ri / static_cast<float>(d) * weighted_dot(gi, w, xi, d);
      input_grad_row(gi, w, xi, ri, c, d, dx + i * d, accumulate);
    }
  });
  if (!dw) return;
  const int64_t blocks = (d + kWeightColumns - 1) / kWeightColumns;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t k0 = b * kWeightColumns;
      weight_grad_columns(d_out + k0, x + k0, r, n, d, std::min(kWeightColumns, d - k0), dw + k0);
    }
  });
}

}  // namespace ot
