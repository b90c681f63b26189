// Log-softmax with target gather, its backward, and the fused unembedding
// versions. The plain ops run rows in parallel, two passes per row (max, then
// Σ exp in float64 chunks). The fused ops compute logits one tile
// [row_block, vocab_block] at a time with ot::gemm and fold each tile into a
// running log-sum-exp per row, so W is read once per row block and no more than
// one tile of logits ever exists. Nothing allocates in steady state.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gemm.h"
#include "loss.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

// Σ exp is accumulated 8-wide in fp32 for this many elements, then in float64.
constexpr int64_t kSumChunk = 1024;

float row_max(const float* x, int64_t v) {
  int64_t j = 0;
  float m = -INFINITY;
#ifdef OT_AVX2
  if (v >= 8) {
    __m256 acc = _mm256_loadu_ps(x);
    for (j = 8; j + 8 <= v; j += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(x + j));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (float lane : lanes) m = std::max(m, lane);
  }
#endif
  for (; j < v; ++j) m = std::max(m, x[j]);
  return m;
}

/** Σ_j exp(x_j − m) in float64 (m finite). */
double row_sum_exp(const float* x, int64_t v, float m) {
  double sum = 0.0;
  int64_t j = 0;
#ifdef OT_AVX2
  const __m256 vm = _mm256_set1_ps(m);
  while (j + 8 <= v) {
    const int64_t end = std::min(v, j + kSumChunk);
    __m256 acc = _mm256_setzero_ps();
    for (; j + 8 <= end; j += 8) acc = _mm256_add_ps(acc, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm)));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (float lane : lanes) sum += static_cast<double>(lane);
  }
#endif
  for (; j < v; ++j) sum += std::exp(static_cast<double>(x[j]) - static_cast<double>(m));
  return sum;
}

/** log Σ_j exp(x_j), shifted by the row max. */
float row_lse(const float* x, int64_t v) {
  const float m = row_max(x, v);
  if (std::isinf(m)) return m;  // all −inf (→ −inf) or a +inf logit (→ +inf)
  return m + static_cast<float>(std::log(row_sum_exp(x, v, m)));
}

/**
 * out[j] = g · (1[j = t] − exp(x_j − lse)) over one row (or a slice of it: t
 * outside [0, v) adds no one-hot). out may alias x.
 */
void row_grad(const float* x, int64_t v, int64_t t, float lse, float g, float* out) {
  int64_t j = 0;
#ifdef OT_AVX2
  const __m256 vl = _mm256_set1_ps(lse), vg = _mm256_set1_ps(-g);
  for (; j + 8 <= v; j += 8) {
    _mm256_storeu_ps(out + j, _mm256_mul_ps(vg, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vl))));
  }
#endif
  for (; j < v; ++j) out[j] = -g * std::exp(x[j] - lse);
  if (t >= 0 && t < v) out[t] += g;
}

/** One tile of logits: [rows, cols] = hidden[row0 .., :] · W[col0 .., :]ᵀ, stored with stride cols. */
void tile_logits(const UnembedShape& s, const float* hidden, const float* w, int64_t row0, int64_t rows, int64_t col0,
                 int64_t cols, float* logits) {
  gemm(gemm_args(false, true, rows, cols, s.d, 1.0f, hidden + row0 * s.d, s.d, w + col0 * s.d, s.d, 0.0f, logits,
                 cols));
}

float* tile_scratch(const UnembedShape& s) {
  thread_local std::vector<float> buffer;
  const size_t size = static_cast<size_t>(std::min(s.row_block, s.n) * std::min(s.vocab_block, s.vocab));
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

}  // namespace

void log_softmax_gather(int64_t n, int64_t vocab, const float* logits, const int32_t* targets, float* logprobs,
                        float* lse) {
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* row = logits + i * vocab;
      lse[i] = row_lse(row, vocab);
      logprobs[i] = row[targets[i]] - lse[i];
    }
  });
}

void log_softmax_gather_backward(int64_t n, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, const float* d_logprobs, float* d_logits) {
  parallel_for(n, grain_for(n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      row_grad(logits + i * vocab, vocab, targets[i], lse[i], d_logprobs[i], d_logits + i * vocab);
    }
  });
}

void unembed_logprobs(const UnembedShape& s, const float* hidden, const float* w, const int32_t* targets,
                      float* logprobs, float* lse) {
  if (s.n == 0) return;
  float* logits = tile_scratch(s);
  thread_local std::vector<double> sum_buffer;
  if (sum_buffer.size() < static_cast<size_t>(std::min(s.row_block, s.n))) {
    sum_buffer.resize(static_cast<size_t>(std::min(s.row_block, s.n)));
  }
  double* sums = sum_buffer.data();  // running Σ exp(logit − running max) of the block's rows
  for (int64_t row0 = 0; row0 < s.n; row0 += s.row_block) {
    const int64_t rows = std::min(s.row_block, s.n - row0);
    float* run_max = lse + row0;  // lse holds the running max until the block is done
    for (int64_t i = 0; i < rows; ++i) {
      run_max[i] = -INFINITY;
      sums[i] = 0.0;
    }
    for (int64_t col0 = 0; col0 < s.vocab; col0 += s.vocab_block) {
      const int64_t cols = std::min(s.vocab_block, s.vocab - col0);
      tile_logits(s, hidden, w, row0, rows, col0, cols, logits);
      parallel_for(rows, grain_for(rows), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const float* row = logits + i * cols;
          const int64_t t = static_cast<int64_t>(targets[row0 + i]) - col0;
          if (t >= 0 && t < cols) logprobs[row0 + i] = row[t];
          const float m = std::max(run_max[i], row_max(row, cols));
          if (std::isinf(m)) {  // nothing finite yet (−inf), or a +inf logit
            run_max[i] = m;
            continue;
          }
          const double rescale = std::exp(static_cast<double>(run_max[i]) - static_cast<double>(m));
          sums[i] = sums[i] * rescale + row_sum_exp(row, cols, m);
          run_max[i] = m;
        }
      });
    }
    for (int64_t i = 0; i < rows; ++i) {
      if (!std::isinf(run_max[i])) run_max[i] += static_cast<float>(std::log(sums[i]));
      logprobs[row0 + i] -= run_max[i];
    }
  }
}

void unembed_logprobs_backward(const UnembedShape& s, const float* hidden, const float* w, const int32_t* targets,
                               const float* lse, const float* d_logprobs, float* d_hidden, float* d_w) {
  if (s.n == 0) return;
  float* logits = tile_scratch(s);
  for (int64_t row0 = 0; row0 < s.n; row0 += s.row_block) {
    const int64_t rows = std::min(s.row_block, s.n - row0);
    for (int64_t col0 = 0; col0 < s.vocab; col0 += s.vocab_block) {
      const int64_t cols = std::min(s.vocab_block, s.vocab - col0);
      tile_logits(s, hidden, w, row0, rows, col0, cols, logits);
      // The tile's logits become its dLogits G [rows, cols], in place.
      parallel_for(rows, grain_for(rows), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t t = static_cast<int64_t>(targets[row0 + i]) - col0;
          row_grad(logits + i * cols, cols, t, lse[row0 + i], d_logprobs[row0 + i], logits + i * cols);
        }
      });
      // dHidden[rows, d] += G · W[col0 .. col0 + cols, :]
      gemm(gemm_args(false, false, rows, s.d, cols, 1.0f, logits, cols, w + col0 * s.d, s.d, 1.0f, d_hidden + row0 * s.d,
                     s.d));
      if (!d_w) continue;
      // dW[col0 .. col0 + cols, :] += Gᵀ · hidden[rows, :]
      gemm(gemm_args(true, false, cols, s.d, rows, 1.0f, logits, cols, hidden + row0 * s.d, s.d, 1.0f, d_w + col0 * s.d,
                     s.d));
    }
  }
}

}  // namespace ot
