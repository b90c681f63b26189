// AdamW and the sum of squares, element-parallel and 8-wide.
#include <cmath>
#include <vector>

#include "optim.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

// Elements per task. The sum of squares uses fixed chunks (not grain_for) so its
// float64 partial sums, and so the result, do not depend on the thread count.
constexpr int64_t kGrain = 16384;

}  // namespace

void adamw_step(int64_t count, float* param, const float* grad, float* m, float* v, const AdamWParams& h) {
  const double bias1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bias2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  // p ← p·decay − step_size · m / (√v · inv_sqrt_bias2 + eps)
  const float decay = static_cast<float>(1.0 - h.lr * h.weight_decay);
  const float step_size = static_cast<float>(h.lr / bias1);
  const float inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
  const float b1 = static_cast<float>(h.beta1), b2 = static_cast<float>(h.beta2);
  const float c1 = static_cast<float>(1.0 - h.beta1), c2 = static_cast<float>(1.0 - h.beta2);
  const float scale = static_cast<float>(h.grad_scale), eps = static_cast<float>(h.eps);
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
#ifdef OT_AVX2
    const __m256 v_decay = _mm256_set1_ps(decay), v_step = _mm256_set1_ps(step_size);
    const __m256 v_ib2 = _mm256_set1_ps(inv_sqrt_bias2), v_eps = _mm256_set1_ps(eps);
    const __m256 v_b1 = _mm256_set1_ps(b1), v_b2 = _mm256_set1_ps(b2);
    const __m256 v_c1 = _mm256_set1_ps(c1), v_c2 = _mm256_set1_ps(c2), v_scale = _mm256_set1_ps(scale);
    for (; i + 8 <= e; i += 8) {
      const __m256 g = _mm256_mul_ps(v_scale, _mm256_loadu_ps(grad + i));
      const __m256 mi = _mm256_fmadd_ps(v_b1, _mm256_loadu_ps(m + i), _mm256_mul_ps(v_c1, g));
      const __m256 vi = _mm256_fmadd_ps(v_b2, _mm256_loadu_ps(v + i), _mm256_mul_ps(v_c2, _mm256_mul_ps(g, g)));
      _mm256_storeu_ps(m + i, mi);
      _mm256_storeu_ps(v + i, vi);
      const __m256 denom = _mm256_fmadd_ps(_mm256_sqrt_ps(vi), v_ib2, v_eps);
      const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(param + i), v_decay);
      _mm256_storeu_ps(param + i, _mm256_fnmadd_ps(v_step, _mm256_div_ps(mi, denom), p));
    }
#endif
    for (; i < e; ++i) {
      const float g = scale * grad[i];
      const float mi = b1 * m[i] + c1 * g;
      const float vi = b2 * v[i] + c2 * g * g;
      m[i] = mi;
      v[i] = vi;
      param[i] = param[i] * decay - step_size * (mi / (std::sqrt(vi) * inv_sqrt_bias2 + eps));
    }
  });
}

double sum_of_squares(const float* x, int64_t count) {
  const int64_t chunks = (count + kGrain - 1) / kGrain;
  thread_local std::vector<double> partial;
  if (partial.size() < static_cast<size_t>(chunks)) partial.resize(static_cast<size_t>(chunks));
  double* sums = partial.data();
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c * kGrain;
      const int64_t e = b + kGrain < count ? b + kGrain : count;
      int64_t i = b;
      double sum = 0.0;
#ifdef OT_AVX2
      __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
      for (; i + 8 <= e; i += 8) {
        const __m256 xs = _mm256_loadu_ps(x + i);
        const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xs));
        const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xs, 1));
        acc0 = _mm256_fmadd_pd(lo, lo, acc0);
        acc1 = _mm256_fmadd_pd(hi, hi, acc1);
      }
      alignas(32) double lanes[4];
      _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
      sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
      for (; i < e; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
      sums[c] = sum;
    }
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += sums[c];
  return total;
}

}  // namespace ot
