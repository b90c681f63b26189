// kernels/rmsnorm.cuh in the CPU execution, in every checking mode, against a
// plain double-precision reference (<= 1e-5 relative per element of y and inv_rms).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "../kernels/rmsnorm.cuh"
#include "check.h"

namespace {

struct Shape {
  int rows, cols;
};

std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w, int rows, int cols,
                              double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += double(x[r * cols + c]) * x[r * cols + c];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv * w[c];
  }
  return y;
}

// Runs one shape in one mode; returns the worst relative error (inf if an
// element was not written, or NaN crept in).
double run(const Shape& s, const ot_cuda::emu::Options& options, std::uint64_t data_seed) {
  std::mt19937_64 rng(data_seed);
  std::uniform_real_distribution<float> ux(-2.0f, 2.0f), uw(0.5f, 1.5f);
  std::vector<float> x(static_cast<std::size_t>(s.rows) * s.cols), w(s.cols);
  for (auto& v : x) v = ux(rng);
  for (auto& v : w) v = uw(rng);
  const float eps = 1e-6f;
  // Poisoned output: an element the kernel forgets to write fails the check.
  std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> inv(static_cast<std::size_t>(s.rows), std::numeric_limits<float>::quiet_NaN());

  const int threads = ot_cuda::kernels::rmsnorm_block_threads(s.cols);
  ot_cuda::emu::launch(ot_cuda::Dim3{static_cast<unsigned>(s.rows)}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
                       ot_cuda::kernels::rmsnorm_shared_bytes(threads), options, [&](auto& ctx) {
                         ot_cuda::kernels::rmsnorm_f32(ctx, x.data(), w.data(), y.data(), inv.data(), s.cols, eps);
                       });

  const auto ref = reference(x, w, s.rows, s.cols, eps);
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double err = std::abs(double(y[i]) - ref[i]) / std::max(std::abs(ref[i]), 1e-30);
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  // inv_rms, the backward's input: 1 / sqrt(mean(x²) + eps) per row.
  for (int r = 0; r < s.rows; ++r) {
    double ss = 0;
    for (int c = 0; c < s.cols; ++c) ss += double(x[r * s.cols + c]) * x[r * s.cols + c];
    const double want = 1.0 / std::sqrt(ss / s.cols + eps);
    const double err = std::abs(double(inv[r]) - want) / want;
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return worst;
}

}  // namespace

TEST(rmsnorm_matches_reference_in_every_mode) {
  std::vector<Shape> shapes{{1, 1}, {3, 7}, {2, 32}, {5, 130}, {4, 1000}, {3, 4096}};
  // One larger shape, opt-in, to keep CI within its budget.
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    shapes.push_back({64, 8192});
  }
  auto modes = ot_cuda::emu::checking_modes(3);
  modes.push_back({"all-checks seed 11, 2 workers", ot_cuda::emu::checking_modes(11)[4].options});
  modes.back().options.workers = 2;
  for (const auto& mode : modes) {
    for (const auto& s : shapes) {
      const double worst = run(s, mode.options, 42 + static_cast<std::uint64_t>(s.cols));
      if (!(worst <= 1e-5)) {
        ot_test::fail(__FILE__, __LINE__,
                      "rmsnorm " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " in mode " + mode.name +
                          ": relative error " + std::to_string(worst));
      }
    }
  }
}

TEST(rmsnorm_block_shape) {
  // Whole warps, at most 8 of them; one float of scratch per warp.
  CHECK_EQ(ot_cuda::kernels::rmsnorm_block_threads(1), 32);
  CHECK_EQ(ot_cuda::kernels::rmsnorm_block_threads(33), 64);
  CHECK_EQ(ot_cuda::kernels::rmsnorm_block_threads(100000), 256);
  CHECK_EQ(ot_cuda::kernels::rmsnorm_shared_bytes(256), std::size_t{32});
}
