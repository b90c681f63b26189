// Rotary position embedding in Hugging Face's rotate_half layout: element k of a
// head pairs with element k + half. Each row's cos/sin are computed once (angles
// in float64, so large positions keep their precision) and shared by its heads.
#include <cmath>
#include <vector>

#include "elementwise.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

/** (a, b) ← (a·c − b·s, b·c + a·s) for a = x[0..half), b = x[half..2·half). */
inline void rotate(float* x, const float* c, const float* s, int64_t half) {
  float* a = x;
  float* b = x + half;
  int64_t k = 0;
#ifdef OT_AVX2
  for (; k + 8 <= half; k += 8) {
    const __m256 va = _mm256_loadu_ps(a + k), vb = _mm256_loadu_ps(b + k);
    const __m256 vc = _mm256_loadu_ps(c + k), vs = _mm256_loadu_ps(s + k);
    _mm256_storeu_ps(a + k, _mm256_fnmadd_ps(vb, vs, _mm256_mul_ps(va, vc)));
    _mm256_storeu_ps(b + k, _mm256_fmadd_ps(va, vs, _mm256_mul_ps(vb, vc)));
  }
#endif
  for (; k < half; ++k) {
    const float ak = a[k], bk = b[k];
    a[k] = ak * c[k] - bk * s[k];
    b[k] = bk * c[k] + ak * s[k];
  }
}

}  // namespace

void rope_apply(int64_t n, int64_t heads, int64_t head_dim, float* x, const int32_t* positions, const float* inv_freq,
                int64_t rot_half, float scale, bool inverse) {
  const double sign = inverse ? -1.0 : 1.0;
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> table;  // [2, rot_half]: cos then sin
    if (table.size() < static_cast<size_t>(2 * rot_half)) table.resize(static_cast<size_t>(2 * rot_half));
    float* c = table.data();
    float* s = c + rot_half;
    for (int64_t i = i0; i < i1; ++i) {
      const double position = static_cast<double>(positions[i]);
      for (int64_t k = 0; k < rot_half; ++k) {
        const double angle = position * static_cast<double>(inv_freq[k]);
        c[k] = static_cast<float>(scale * std::cos(angle));
        s[k] = static_cast<float>(sign * scale * std::sin(angle));
      }
      float* row = x + i * heads * head_dim;
      for (int64_t h = 0; h < heads; ++h) rotate(row + h * head_dim, c, s, rot_half);
    }
  });
}

}  // namespace ot
