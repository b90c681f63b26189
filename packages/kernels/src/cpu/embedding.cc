// Token embedding: a row gather forward, a scatter-add backward.
#include <algorithm>
#include <cstring>

#include "elementwise.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

// Columns per backward task (a multiple of 8 floats: whole AVX2 vectors).
constexpr int64_t kColumns = 128;

}  // namespace

void embedding_forward(int64_t n, int64_t d, const int32_t* ids, const float* table, float* out) {
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      std::memcpy(out + i * d, table + static_cast<int64_t>(ids[i]) * d, static_cast<size_t>(d) * sizeof(float));
    }
  });
}

void embedding_backward(int64_t n, int64_t d, const int32_t* ids, const float* d_out, float* d_table) {
  const int64_t blocks = (d + kColumns - 1) / kColumns;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t k0 = b * kColumns;
      const int64_t width = std::min(kColumns, d - k0);
      for (int64_t i = 0; i < n; ++i) axpy(1.0f, d_out + i * d + k0, d_table + static_cast<int64_t>(ids[i]) * d + k0, width);
    }
  });
}

}  // namespace ot
