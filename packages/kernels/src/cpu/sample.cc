// Token sampling from rows of logits, natively and batched: one call draws every
// token of a sampler step (the per-step cost in JavaScript was as large as the
// model step itself at batch 16, and a full sort of a 152K vocabulary per top-k /
// top-p draw far larger). Each draw reads one logits row (several draws may share
// a row: a prompt's n completions) with its own temperature, top-k, top-p, min-p
// and uniform number u in [0, 1):
//   - temperature 0 → argmax (ties to the lower id), whatever the filters;
//   - no filter → inverse-CDF sampling of softmax(logits / T) in vocabulary order;
//   - else the candidates in order of logit (descending, ties to the lower id) are
//     cut to the k largest, then to the smallest prefix whose probability (over
//     the top-k, at temperature T) reaches top-p, then to those with probability
//     ≥ min-p · the largest; u picks one by inverse CDF over that prefix in that
//     order. Partial selection only: nth_element for top-k, a radix select on
//     log-weight for top-p, a partition for min-p; only the survivors are sorted.
// The logprob written is log π(token) at temperature 1 (logit − log-sum-exp, the
// log-sum-exp rounded to float32 as the sampler always reported it).
//
// Also the scores of given tokens (scoreRows: a prompt's own logprobs, and the k
// most likely tokens of each row), with the same log-sum-exp and the same order
// of candidates, so a prompt's scores and a sampled token's logprob agree.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common.h"
#include "ops.h"
#include "sample_draw.h"
#include "thread_pool.h"

namespace ot {
namespace {
std::string element(const char* name, int64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

// sampleRows(logits, rows, vocab, rowOf, temperatures, topK, topP, minP, uniforms, tokens, logprobs)
//   logits [rows, vocab]; per draw i < m: rowOf [m] (Int32Array, the logits row it reads),
//   temperatures [m] ≥ 0, topK [m] (Int32Array, ≤ 0 = off), topP [m] in (0, 1], minP [m]
//   in [0, 1], uniforms [m] in [0, 1) (Float64Arrays); tokens [m] (Int32Array) and
//   logprobs [m] (Float64Array, log π(token) at temperature 1) are written.
void SampleRows(const Args& a) {
  const int64_t rows = a.dim(1, "rows");
  const int64_t vocab = a.dim(2, "vocab", 1, INT32_MAX);
  const float* logits = a.f32(0, "logits", rows * vocab);
  const int32_t* row_of = a.i32(3, "rowOf", -1);
  const int64_t m = a.length_of(3);
  const auto f64 = [&](size_t i, const char* name) {
    return a.typed<double, napi_float64_array>(i, name, "Float64Array", m);
  };
  const double* temperatures = f64(4, "temperatures");
  const int32_t* top_k = a.i32(5, "topK", m);
  const double* top_p = f64(6, "topP");
  const double* min_p = f64(7, "minP");
  const double* uniforms = f64(8, "uniforms");
  int32_t* tokens = a.i32(9, "tokens", m);
  double* logprobs = f64(10, "logprobs");
  check_indices(a, "rowOf", row_of, m, 0, rows);
  for (int64_t i = 0; i < m; ++i) {
    if (!(temperatures[i] >= 0.0) || !std::isfinite(temperatures[i])) {
      throw_range(a.env(), a.op, element("temperatures", i).c_str(), "must be a finite number ≥ 0");
    }
    if (!(top_p[i] > 0.0 && top_p[i] <= 1.0)) throw_range(a.env(), a.op, element("topP", i).c_str(), "must be in (0, 1]");
    if (!(min_p[i] >= 0.0 && min_p[i] <= 1.0)) throw_range(a.env(), a.op, element("minP", i).c_str(), "must be in [0, 1]");
    if (!(uniforms[i] >= 0.0 && uniforms[i] < 1.0)) {
      throw_range(a.env(), a.op, element("uniforms", i).c_str(), "must be in [0, 1)");
    }
  }
  // Only the rows some draw reads get their max and log-sum-exp.
  std::vector<RowStats> stats(static_cast<size_t>(rows));
  std::vector<char> wanted(static_cast<size_t>(rows), 0);
  for (int64_t i = 0; i < m; ++i) wanted[row_of[i]] = 1;
  parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (wanted[r]) stats[r] = row_stats(logits + r * vocab, vocab);
    }
  });
  parallel_for(m, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = row_of[i];
      const RowStats& s = stats[r];
      const Draw d{temperatures[i], top_k[i], top_p[i], min_p[i], uniforms[i]};
      const int32_t token = draw_one(logits + r * vocab, vocab, s, d);
      tokens[i] = token;
      logprobs[i] = static_cast<double>(logits[r * vocab + token]) - static_cast<double>(s.lse1);
    }
  });
}

/**
 * The k first candidates of a row in the draw's order (larger logit first, ties
 * to the lower id), written in that order: one pass with a heap of k, so a small
 * k over a large vocabulary costs about one comparison per token and no copy.
 */
void top_k(const float* logits, int64_t vocab, int64_t k, Cand* out) {
  if (k == 0) return;
  thread_local std::vector<Cand> heap;
  heap.clear();
  // With `before` as the heap's order its front is the worst kept candidate.
  // Once the heap is full, a token displaces it only with a strictly larger logit
  // (a tie has the larger id, so it comes after): one comparison skips the rest,
  // NaN included.
  float worst = kNegInf;
  for (int64_t i = 0; i < vocab; ++i) {
    const float l = logits[i];
    const bool full = static_cast<int64_t>(heap.size()) == k;
    if (full && !(l > worst)) continue;
    const Cand c{std::isnan(l) ? kNegInf : l, static_cast<int32_t>(i)};
    if (full) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.pop_back();
    }
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), before);
    worst = heap.front().key;
  }
  std::sort_heap(heap.begin(), heap.end(), before);
  std::copy(heap.begin(), heap.end(), out);
}

// scoreRows(logits, rows, vocab, targets, k, logprobs, topIds, topLogprobs)
//   logits [rows, vocab]; targets [rows] (Int32Array, token ids in [0, vocab)); k in [0, vocab];
//   logprobs [rows] (Float64Array) gets log π(target) at temperature 1; topIds [rows, k]
//   (Int32Array) and topLogprobs [rows, k] (Float64Array) get each row's k most likely
//   tokens, larger logit first, ties to the lower id, with their logprobs at temperature 1.
void ScoreRows(const Args& a) {
  const int64_t rows = a.dim(1, "rows");
  const int64_t vocab = a.dim(2, "vocab", 1, INT32_MAX);
  const float* logits = a.f32(0, "logits", rows * vocab);
  const int32_t* targets = a.i32(3, "targets", rows);
  const int64_t k = a.dim(4, "k", 0, vocab);
  double* logprobs = a.typed<double, napi_float64_array>(5, "logprobs", "Float64Array", rows);
  int32_t* top_ids = a.i32(6, "topIds", rows * k);
  double* top_logprobs = a.typed<double, napi_float64_array>(7, "topLogprobs", "Float64Array", rows * k);
  check_indices(a, "targets", targets, rows, 0, vocab);
  parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<Cand> top;
    top.resize(static_cast<size_t>(k));
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = logits + r * vocab;
      const double lse = row_stats(row, vocab).lse1;
      logprobs[r] = static_cast<double>(row[targets[r]]) - lse;
      top_k(row, vocab, k, top.data());
      for (int64_t j = 0; j < k; ++j) {
        const int32_t id = top[j].id;
        top_ids[r * k + j] = id;
        top_logprobs[r * k + j] = static_cast<double>(row[id]) - lse;
      }
    }
  });
}

constexpr Op kOps[] = {{"sampleRows", 11, SampleRows}, {"scoreRows", 8, ScoreRows}};

}  // namespace

void register_sample(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
