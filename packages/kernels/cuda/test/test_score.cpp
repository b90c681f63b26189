// kernels/score.cuh in the CPU execution, in every checking mode, against the
// CPU backend's scoreRows (../../src/cpu/sample.cc): the log-sum-exp from
// sample_draw.cc's row_stats (linked in), the top-k from a copy of sample.cc's
// top_k (sample.cc itself needs Node). Ids must be equal, logprobs within 1e-9
// relative. Random rows have distinct logits; the ties test has integer logits,
// ±0, -inf and NaN, and a row of -inf.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../../src/cpu/sample_draw.h"
#include "../include/ot_cuda/launch.h"
#include "../kernels/launchers.h"
#include "../kernels/score.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// sample.cc's top_k, verbatim but for the buffer: the k first candidates in the
// draw's order with a heap of k.
void cpu_top_k(const float* logits, std::int64_t vocab, std::int64_t k, ot::Cand* out) {
  if (k == 0) return;
  std::vector<ot::Cand> heap;
  float worst = ot::kNegInf;
  for (std::int64_t i = 0; i < vocab; ++i) {
    const float l = logits[i];
    const bool full = static_cast<std::int64_t>(heap.size()) == k;
    if (full && !(l > worst)) continue;
    const ot::Cand c{std::isnan(l) ? ot::kNegInf : l, static_cast<std::int32_t>(i)};
    if (full) {
      std::pop_heap(heap.begin(), heap.end(), ot::before);
      heap.pop_back();
    }
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), ot::before);
    worst = heap.front().key;
  }
  std::sort_heap(heap.begin(), heap.end(), ot::before);
  std::copy(heap.begin(), heap.end(), out);
}

struct Scores {
  std::vector<double> lp, top_lp;
  std::vector<std::int32_t> ids;
};

// ScoreRows' loop over rows.
Scores cpu_scores(const std::vector<float>& x, int rows, int vocab, const std::vector<std::int32_t>& t, int kk) {
  Scores s{std::vector<double>(rows), std::vector<double>(static_cast<std::size_t>(rows) * kk),
           std::vector<std::int32_t>(static_cast<std::size_t>(rows) * kk)};
  std::vector<ot::Cand> top(static_cast<std::size_t>(kk));
  for (int r = 0; r < rows; ++r) {
    const float* row = x.data() + static_cast<std::size_t>(r) * vocab;
    const double lse = ot::row_stats(row, vocab).lse1;
    s.lp[r] = static_cast<double>(row[t[r]]) - lse;
    cpu_top_k(row, vocab, kk, top.data());
    for (int j = 0; j < kk; ++j) {
      s.ids[static_cast<std::size_t>(r) * kk + j] = top[j].id;
      s.top_lp[static_cast<std::size_t>(r) * kk + j] = static_cast<double>(row[top[j].id]) - lse;
    }
  }
  return s;
}

// The kernel as the launcher runs it; outputs poisoned (NaN, id -7).
Scores gpu_scores(const std::vector<float>& x, int rows, int vocab, const std::vector<std::int32_t>& t, int kk,
                  const emu::Options& options) {
  Scores s{std::vector<double>(rows, std::numeric_limits<double>::quiet_NaN()),
           std::vector<double>(static_cast<std::size_t>(rows) * kk, std::numeric_limits<double>::quiet_NaN()),
           std::vector<std::int32_t>(static_cast<std::size_t>(rows) * kk, -7)};
  if (rows == 0) return s;
  const k::ScoreArgs a{x.data(), t.data(), vocab, kk, s.lp.data(), s.ids.data(), s.top_lp.data()};
  const unsigned threads = static_cast<unsigned>(k::score_block_threads(vocab));
  k::score_with_local_k(kk, [&](auto local_k) {
    emu::launch(ot_cuda::Dim3{static_cast<unsigned>(rows)}, ot_cuda::Dim3{threads}, k::score_shared_bytes(), options,
                [&](auto& ctx) { k::score_rows_f32<decltype(local_k)::value>(ctx, a); });
  });
  return s;
}

// Ids equal; logprobs within 1e-9 relative (NaN where the CPU's are NaN).
void compare(const Scores& got, const Scores& ref, const std::string& what) {
  int wrong_ids = 0, wrong_nans = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < ref.ids.size(); ++i) {
    if (got.ids[i] != ref.ids[i] && wrong_ids++ == 0) first = i;
  }
  if (wrong_ids != 0) {
    ot_test::fail(__FILE__, __LINE__,
                  what + ": " + std::to_string(wrong_ids) + " ids differ, first at " + std::to_string(first) + " (" +
                      std::to_string(got.ids[first]) + ", the CPU backend's " + std::to_string(ref.ids[first]) + ")");
  }
  ot_test::Worst w;
  const auto add = [&](const std::vector<double>& g, const std::vector<double>& r, std::size_t offset) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (std::isnan(r[i])) {
        wrong_nans += std::isnan(g[i]) ? 0 : 1;
        continue;
      }
      w.add(g[i], r[i], 0, offset + i);
    }
  };
  add(got.lp, ref.lp, 0);
  add(got.top_lp, ref.top_lp, ref.lp.size());
  CHECK_EQ(wrong_nans, 0);
  EXPECT_WITHIN(
      w, 1e-9,
      what + ": logprobs vs the CPU backend (top ones after the " + std::to_string(ref.lp.size()) + " targets')");
}

// Distinct logits in [-8, 8): a shuffled ramp.
std::vector<float> distinct_rows(int rows, int vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> x(static_cast<std::size_t>(rows) * vocab);
  std::vector<int> perm(vocab);
  for (int r = 0; r < rows; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int j = 0; j < vocab; ++j) {
      x[static_cast<std::size_t>(r) * vocab + j] =
          static_cast<float>(perm[j]) * (16.0f / static_cast<float>(vocab)) - 8.0f;
    }
  }
  return x;
}

std::vector<std::int32_t> some_targets(int rows, int vocab) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) t[r] = (r * 37 + 11) % vocab;
  return t;
}

void run(int rows, int vocab, const std::vector<int>& ks, const emu::Mode& mode, std::uint64_t seed) {
  const auto x = distinct_rows(rows, vocab, seed);
  const auto t = some_targets(rows, vocab);
  for (int kk : ks) {
    if (kk > vocab) continue;
    const std::string what = "score " + std::to_string(rows) + "x" + std::to_string(vocab) + " k " +
                             std::to_string(kk) + " in mode " + mode.name;
    compare(gpu_scores(x, rows, vocab, t, kk, mode.options), cpu_scores(x, rows, vocab, t, kk), what);
  }
}

}  // namespace

TEST(score_matches_cpu_backend_in_every_mode) {
  const std::vector<int> ks{0, 1, 2, 3, 5, 8, 13, 20, 32};
  const auto modes = ot_test::op_modes();
  for (std::size_t mi = 0; mi < modes.size(); ++mi) {
    run(1, 1, {0, 1}, modes[mi], 10 + mi);
    run(3, 7, {0, 1, 3, 7}, modes[mi], 20 + mi);
    run(2, 33, {1, 20, 32}, modes[mi], 30 + mi);
    run(2, 32, {32}, modes[mi], 35 + mi);  // k = vocab
    run(4, 1000, ks, modes[mi], 40 + mi);
    run(0, 50, {5}, modes[mi], 50 + mi);
  }
  run(3, 5000, ks, modes[0], 60);
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    run(3, 152000, {1, 20, 32}, modes[0], 70);
    run(2, 152000, {20}, modes.back(), 71);
  }
}

TEST(score_ties_follow_the_cpu_backend) {
  // Integer logits (many ties, the maximum tied), ±0, -inf and NaN; ties go to
  // the lower id, NaN ranks as -inf (its logprob is NaN: the CPU's lse is).
  const int vocab = 300;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> ui(-3, 3);
  std::vector<float> x(5 * vocab);
  for (int j = 0; j < vocab; ++j) {
    x[j] = static_cast<float>(ui(rng));                                             // row 0: ties
    x[vocab + j] = rng() % 3 == 0 ? -kInf : static_cast<float>(ui(rng));            // row 1: ties and -inf
    x[2 * vocab + j] = j % 2 == 0 ? 0.0f : -0.0f;                                   // row 2: ±0 only
    x[3 * vocab + j] = rng() % 4 == 0 ? kNaN : static_cast<float>(ui(rng)) * 0.5f;  // row 3: NaN
    x[4 * vocab + j] = -kInf;                                                       // row 4: all -inf
  }
  x[vocab + 7] = x[vocab + 250] = 4.0f;  // row 1's maximum, tied
  x[3 * vocab + 0] = kNaN;
  for (int j = 0; j < 40; ++j) x[4 * vocab + 100 + j] = kNaN;  // NaN among the -inf: ranks as -inf
  const auto t = some_targets(5, vocab);
  const auto modes = ot_test::op_modes();
  for (int kk : {1, 2, 6, 17, 32}) {
    for (const auto& mode : modes) {
      compare(gpu_scores(x, 5, vocab, t, kk, mode.options), cpu_scores(x, 5, vocab, t, kk),
              "score ties k " + std::to_string(kk) + " in mode " + mode.name);
    }
  }
  // k = vocab for a short row of ties: the whole order.
  const std::vector<float> y{1, 2, 2, -kInf, 1, kNaN, 2, -0.0f, 0.0f, -kInf};
  const std::vector<std::int32_t> ty{3};
  compare(gpu_scores(y, 1, 10, ty, 10, modes[0].options), cpu_scores(y, 1, 10, ty, 10), "score the whole order");
  const Scores whole = gpu_scores(y, 1, 10, ty, 10, modes[0].options);
  CHECK(whole.ids == (std::vector<std::int32_t>{1, 2, 6, 0, 4, 7, 8, 3, 5, 9}));
}

TEST(score_launcher_validates_and_matches_its_body) {
  const int rows = 3, vocab = 500, kk = 12;
  const auto x = distinct_rows(rows, vocab, 9);
  const auto t = some_targets(rows, vocab);
  const Scores by_hand = gpu_scores(x, rows, vocab, t, kk, {});
  Scores launched{std::vector<double>(rows), std::vector<double>(rows * kk), std::vector<std::int32_t>(rows * kk)};
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), rows, vocab, t.data(), kk, launched.lp.data(), launched.ids.data(),
                                  launched.top_lp.data(), nullptr),
           cudaSuccess);
  CHECK(launched.ids == by_hand.ids);
  CHECK(launched.lp == by_hand.lp);
  CHECK(launched.top_lp == by_hand.top_lp);
  double lp = 0;
  std::int32_t id = 0;
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), 0, vocab, t.data(), kk, &lp, &id, &lp, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), rows, 0, t.data(), 0, &lp, &id, &lp, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), rows, vocab, t.data(), -1, &lp, &id, &lp, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), rows, 20, t.data(), 21, &lp, &id, &lp, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_score_rows_f32(x.data(), rows, vocab, t.data(), k::kScoreMaxK + 1, &lp, &id, &lp, nullptr),
           cudaErrorInvalidValue);
}

TEST(score_launch_shape) {
  CHECK_EQ(k::score_block_threads(1), 32);
  CHECK_EQ(k::score_block_threads(1000), 128);
  CHECK_EQ(k::score_block_threads(152000), 256);
  CHECK_EQ(k::score_local_k(0), 1);
  CHECK_EQ(k::score_local_k(1), 1);
  CHECK_EQ(k::score_local_k(3), 4);
  CHECK_EQ(k::score_local_k(20), 32);
  CHECK_EQ(k::score_local_k(32), 32);
  CHECK_EQ(k::score_shared_bytes(), std::size_t{16 * 8 + 8 * 8 + 32 * 4});
}
