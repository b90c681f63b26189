// SwiGLU, the Llama MLP's gate: y = silu(gate) · up, silu(g) = g · σ(g).
#include <cmath>

#include "elementwise.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

inline float sigmoid(float g) { return 1.0f / (1.0f + std::exp(-g)); }

// Elements per task: large enough to amortise the pool, small enough to balance.
constexpr int64_t kGrain = 16384;

}  // namespace

void swiglu_forward(int64_t count, const float* gate, const float* up, float* out) {
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
#ifdef OT_AVX2
    for (; i + 8 <= e; i += 8) {
      const __m256 g = _mm256_loadu_ps(gate + i);
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid256(g)), _mm256_loadu_ps(up + i)));
    }
#endif
    for (; i < e; ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
  });
}

void swiglu_backward(int64_t count, const float* d_out, const float* gate, const float* up, float* d_gate,
                     float* d_up) {
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
#ifdef OT_AVX2
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= e; i += 8) {
      const __m256 g = _mm256_loadu_ps(gate + i);
      const __m256 dy = _mm256_loadu_ps(d_out + i);
      const __m256 sg = sigmoid256(g);
      const __m256 silu = _mm256_mul_ps(g, sg);
      // silu'(g) = σ + g·σ·(1 − σ) = σ · (1 + g·(1 − σ))
      const __m256 dsilu = _mm256_mul_ps(sg, _mm256_fmadd_ps(g, _mm256_sub_ps(one, sg), one));
      _mm256_storeu_ps(d_up + i, _mm256_mul_ps(dy, silu));
      _mm256_storeu_ps(d_gate + i, _mm256_mul_ps(_mm256_mul_ps(dy, _mm256_loadu_ps(up + i)), dsilu));
    }
#endif
    for (; i < e; ++i) {
      const float g = gate[i];
      const float sg = sigmoid(g);
      d_up[i] = d_out[i] * g * sg;
      d_gate[i] = d_out[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
    }
  });
}

}  // namespace ot
