// The CPU backend's token draws (sample.cc binds them as sampleRows and
// scoreRows): a row's statistics, one draw with temperature, top-k, top-p and
// min-p, and the candidates' order. In their own file so the CUDA kernels' tests
// (packages/kernels/cuda/test/test_sample.cpp) draw with the very same code.
#pragma once

#include <cstdint>
#include <limits>

namespace ot {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/** Per logits row, shared by the draws that read it. */
struct RowStats {
  float max;
  int32_t argmax;
  float lse1;  // temperature-1 log-sum-exp
  double z1;   // Σ exp(logit − max), reused by temperature-1 draws
};

/** The max, argmax and temperature-1 log-sum-exp of a row. */
RowStats row_stats(const float* logits, int64_t vocab);

struct Draw {
  double temperature;
  int32_t top_k;
  double top_p;
  double min_p;
  double u;
};

/** A candidate token; NaN logits order as -inf, so the ordering stays a strict weak order. */
struct Cand {
  float key;
  int32_t id;
};

/** a before b in the draw's order: larger logit first, ties to the lower id. */
inline bool before(const Cand& a, const Cand& b) { return a.key > b.key || (a.key == b.key && a.id < b.id); }

/** The token a draw takes from a row (see sample.cc for the rules). */
int32_t draw_one(const float* logits, int64_t vocab, const RowStats& s, const Draw& d);

}  // namespace ot
