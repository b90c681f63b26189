// kernels/logprobs.cuh in the CPU execution, in every checking mode, against a
// float64 reference and the CPU backend (../../src/cpu/softmax.cc).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../../src/cpu/loss.h"
#include "../kernels/logprobs.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

void run(int rows, int vocab, bool masked, const emu::Mode& mode) {
  const std::string what = "logprobs " + std::to_string(rows) + "x" + std::to_string(vocab) +
                           (masked ? " (with -inf)" : "") + " in mode " + mode.name;
  const std::size_t size = static_cast<std::size_t>(rows) * vocab;
  auto logits = ot_test::random_floats(size, -8.0f, 8.0f, 70 + size);
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) targets[i] = (i * 37 + 11) % vocab;
  if (masked) {  // every third logit masked, never the target
    for (std::size_t j = 0; j < size; j += 3) {
      if (static_cast<int>(j % vocab) != targets[j / vocab]) logits[j] = -std::numeric_limits<float>::infinity();
    }
  }
  const auto g = ot_test::random_floats(static_cast<std::size_t>(rows), -2.0f, 2.0f, 71 + size);
  auto lp = ot_test::nan_floats(rows), lse = ot_test::nan_floats(rows), dx = ot_test::nan_floats(size);
  const int threads = k::logprobs_block_threads(vocab);
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(rows)}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
              k::logprobs_shared_bytes(threads), mode.options, [&](auto& ctx) {
                k::log_softmax_gather_f32(ctx, logits.data(), targets.data(), lp.data(), lse.data(), vocab);
              });
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(rows)}, ot_cuda::Dim3{static_cast<unsigned>(threads)}, 0,
              mode.options, [&](auto& ctx) {
                k::log_softmax_gather_backward_f32(ctx, logits.data(), targets.data(), lse.data(), g.data(),
                                                   dx.data(), vocab);
              });

  // The CPU backend, and a float64 reference.
  std::vector<float> cpu_lp(rows), cpu_lse(rows), cpu_dx(size);
  ot::log_softmax_gather(rows, vocab, logits.data(), targets.data(), cpu_lp.data(), cpu_lse.data());
  ot::log_softmax_gather_backward(rows, vocab, logits.data(), targets.data(), cpu_lse.data(), g.data(),
                                  cpu_dx.data());
  ot_test::Worst w_lse, w_lp, w_dx, c_lp, c_dx;
  for (int i = 0; i < rows; ++i) {
    const float* x = logits.data() + static_cast<std::size_t>(i) * vocab;
    double m = -INFINITY, s = 0;
    for (int j = 0; j < vocab; ++j) m = std::max(m, double(x[j]));
    for (int j = 0; j < vocab; ++j) s += std::exp(double(x[j]) - m);
    const double ref_lse = m + std::log(s), ref_lp = double(x[targets[i]]) - ref_lse;
    w_lse.add(lse[i], ref_lse, 0, i);
    w_lp.add(lp[i], ref_lp, std::abs(double(x[targets[i]])) + std::abs(ref_lse), i);
    c_lp.add(lp[i], cpu_lp[i], std::abs(double(x[targets[i]])) + std::abs(double(cpu_lse[i])), i);
    for (int j = 0; j < vocab; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * vocab + j;
      const double p = std::exp(double(x[j]) - ref_lse);
      const double ref = double(g[i]) * ((j == targets[i] ? 1.0 : 0.0) - p);
      const double mag = std::abs(double(g[i])) * ((j == targets[i] ? 1.0 : 0.0) + p);
      w_dx.add(dx[e], ref, mag, e);
      c_dx.add(dx[e], cpu_dx[e], mag, e);
    }
  }
  EXPECT_WITHIN(w_lse, 1e-5, what + ": lse vs float64");
  EXPECT_WITHIN(w_lp, 1e-5, what + ": logprobs vs float64");
  EXPECT_WITHIN(w_dx, 1e-5, what + ": dLogits vs float64");
  EXPECT_WITHIN(c_lp, 1e-5, what + ": logprobs vs the CPU backend");
  EXPECT_WITHIN(c_dx, 1e-5, what + ": dLogits vs the CPU backend");
}

}  // namespace

TEST(logprobs_matches_reference_and_cpu_backend_in_every_mode) {
  struct Shape {
    int rows, vocab;
    bool masked;
  };
  const std::vector<Shape> shapes{{1, 1, false}, {3, 7, false}, {2, 33, true}, {4, 1000, false}, {3, 1000, true},
                                  {2, 5000, false}};
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& s : shapes) run(s.rows, s.vocab, s.masked, mode);
  }
}

TEST(logprobs_row_of_inf_gets_inf_lse) {
  // A row of -inf: lse -inf, as the CPU backend (log of an empty sum).
  const int vocab = 40;
  std::vector<float> x(vocab, -std::numeric_limits<float>::infinity());
  std::vector<std::int32_t> t{5};
  auto lp = ot_test::nan_floats(1), lse = ot_test::nan_floats(1);
  std::vector<float> cpu_lp(1), cpu_lse(1);
  const int threads = k::logprobs_block_threads(vocab);
  emu::launch(ot_cuda::Dim3{1}, ot_cuda::Dim3{static_cast<unsigned>(threads)}, k::logprobs_shared_bytes(threads),
              emu::checking_modes()[0].options,
              [&](auto& ctx) { k::log_softmax_gather_f32(ctx, x.data(), t.data(), lp.data(), lse.data(), vocab); });
  ot::log_softmax_gather(1, vocab, x.data(), t.data(), cpu_lp.data(), cpu_lse.data());
  CHECK(lse[0] == cpu_lse[0]);
  CHECK(std::isnan(lp[0]) == std::isnan(cpu_lp[0]));
}
