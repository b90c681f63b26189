// The elementwise adds of a forward pass: the residual stream's (x += y) and a
// linear layer's bias (each row += b). One add per element, so the result is the
// same as any loop's, only vectorised and spread over the pool.
#include <algorithm>

#include "elementwise.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

// Elements per task: large enough to amortise the pool, small enough to balance.
constexpr int64_t kGrain = 32768;

/** out[i] += x[i] for i in [0, count). */
inline void add_span(float* out, const float* x, int64_t count) {
  int64_t i = 0;
#ifdef OT_AVX2
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(out + i), _mm256_loadu_ps(x + i)));
#endif
  for (; i < count; ++i) out[i] += x[i];
}

}  // namespace

void add_in_place(int64_t count, float* target, const float* source) {
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) { add_span(target + b, source + b, e - b); });
}

void add_bias(int64_t rows, int64_t d, float* y, const float* bias) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, d));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) add_span(y + r * d, bias, d);
  });
}

}  // namespace ot
