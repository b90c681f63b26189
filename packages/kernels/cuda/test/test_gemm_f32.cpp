// kernels/gemm_f32.cuh in the CPU execution, in every checking mode, against
// a float64 reference: y = x W^T, written and accumulated. <= 1e-5 relative
// (elementwise) where every product and partial sum is exact in f32; on
// random f32 data, within f32 fma accumulation error and <= 1e-5 relative to
// the sum of the magnitudes of the terms (elementwise relative error is
// unbounded where the terms cancel: 33x70x48 reaches 3e-5 against a floor of
// 1e-3 of the largest |y|).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../kernels/gemm_f32.cuh"
#include "check.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;

struct Shape {
  int m, n, k;
};

struct Result {
  double worst_bound = 0;  // |y - ref| / ((k + 1) * 2^-24 * (sum |x w| + |prior|)): <= 1 is f32 error
  double worst_rel = 0;    // |y - ref| / max(|ref|, 1e-3 * max |ref|)
  double worst_mag_rel = 0;  // |y - ref| / (sum |x w| + |prior|)
  bool all_written = true;
};

Result run(const Shape& s, const ot_cuda::emu::Options& options, std::uint64_t seed, bool exact_data,
           bool accumulate) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_int_distribution<int> small(-8, 8);
  // Exact data: integers / 8 in x, integers in W and the prior y: every
  // product and partial sum is a multiple of 1/8 far below 2^21.
  auto gen = [&](float scale) { return exact_data ? static_cast<float>(small(rng)) / scale : u(rng); };
  std::vector<float> x(static_cast<std::size_t>(s.m) * s.k), w(static_cast<std::size_t>(s.n) * s.k);
  for (auto& v : x) v = gen(8.0f);
  for (auto& v : w) v = gen(1.0f);
  std::vector<float> y(static_cast<std::size_t>(s.m) * s.n, std::numeric_limits<float>::quiet_NaN());
  std::vector<double> prior(y.size(), 0.0);
  if (accumulate) {
    for (std::size_t i = 0; i < y.size(); ++i) prior[i] = y[i] = gen(1.0f);
  }

  ot_cuda::emu::launch(k::gemm_f32_grid(s.m, s.n), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_f32_block_threads())},
                       k::gemm_f32_shared_bytes(), options, [&](auto& ctx) {
                         k::gemm_f32_xwt(ctx, x.data(), w.data(), y.data(), s.m, s.n, s.k, accumulate);
                       });

  std::vector<double> ref(y.size()), mag(y.size());
  double max_ref = 0;
  for (int r = 0; r < s.m; ++r) {
    for (int c = 0; c < s.n; ++c) {
      double acc = 0, a = 0;
      for (int i = 0; i < s.k; ++i) {
        const double p = double(x[std::size_t(r) * s.k + i]) * double(w[std::size_t(c) * s.k + i]);
        acc += p;
        a += std::abs(p);
      }
      const std::size_t i = std::size_t(r) * s.n + c;
      ref[i] = prior[i] + acc;
      mag[i] = std::abs(prior[i]) + a;
      max_ref = std::max(max_ref, std::abs(ref[i]));
    }
  }
  Result res;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(y[i])) {
      res.all_written = false;
      continue;
    }
    const double err = std::abs(double(y[i]) - ref[i]);
    const double bound = (s.k + 1) * std::ldexp(1.0, -24) * mag[i];
    res.worst_bound = std::max(res.worst_bound, err == 0 ? 0.0 : bound == 0 ? INFINITY : err / bound);
    const double floor = std::max(std::abs(ref[i]), 1e-3 * max_ref);
    res.worst_rel = std::max(res.worst_rel, err == 0 ? 0.0 : floor == 0 ? INFINITY : err / floor);
    res.worst_mag_rel = std::max(res.worst_mag_rel, err == 0 ? 0.0 : mag[i] == 0 ? INFINITY : err / mag[i]);
  }
  return res;
}

std::string name(const Shape& s) { return ot_test::shape_name(s.m, s.n, s.k); }

std::vector<ot_cuda::emu::Mode> modes() { return ot_test::op_modes(7, 17); }

}  // namespace

TEST(gemm_f32_matches_reference_in_every_mode) {
  // Odd m, n, k; k not a multiple of 16, of one stage and several; tiles cut
  // at every edge, more than one tile in each direction.
  std::vector<Shape> shapes{{1, 1, 1}, {3, 5, 7}, {17, 9, 16}, {16, 8, 33}, {33, 70, 48}, {65, 129, 40},
                            {7, 3, 100}};
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    shapes.push_back({256, 320, 1024});
  }
  for (const auto& mode : modes()) {
    for (const auto& s : shapes) {
      for (bool accumulate : {false, true}) {
        const std::string what = name(s) + (accumulate ? " accumulating" : "") + ", mode " + mode.name;
        const std::uint64_t seed = 99 + static_cast<std::uint64_t>(s.m * 1000 + s.n * 10 + s.k) + accumulate;
        const Result exact = run(s, mode.options, seed, true, accumulate);
        if (!exact.all_written || !(exact.worst_rel <= 1e-5)) {
          ot_test::fail(__FILE__, __LINE__,
                        "gemm_f32 " + what + " exact data: relative error " + std::to_string(exact.worst_rel) +
                            (exact.all_written ? "" : ", elements not written"));
        }
        const Result rnd = run(s, mode.options, seed + 2, false, accumulate);
        if (!rnd.all_written || !(rnd.worst_bound <= 1.0) || !(rnd.worst_mag_rel <= 1e-5)) {
          ot_test::fail(__FILE__, __LINE__,
                        "gemm_f32 " + what + " random data: error / f32 bound " + std::to_string(rnd.worst_bound) +
                            ", relative to the terms' magnitude " + std::to_string(rnd.worst_mag_rel) +
                            (rnd.all_written ? "" : ", elements not written"));
        }
      }
    }
  }
}

TEST(gemm_f32_k_zero) {
  // k == 0 writes zeros, or leaves y as it is when accumulating.
  const auto options = ot_cuda::emu::checking_modes(1)[4].options;
  for (bool accumulate : {false, true}) {
    std::vector<float> y{1.5f, -2.0f, 3.25f, 0.0f, 4.0f, -1.0f};
    const std::vector<float> before = y;
    ot_cuda::emu::launch(k::gemm_f32_grid(2, 3), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_f32_block_threads())},
                         k::gemm_f32_shared_bytes(), options,
                         [&](auto& ctx) { k::gemm_f32_xwt(ctx, nullptr, nullptr, y.data(), 2, 3, 0, accumulate); });
    for (std::size_t i = 0; i < y.size(); ++i) CHECK_EQ(y[i], accumulate ? before[i] : 0.0f);
  }
}

TEST(gemm_f32_launch_shape) {
  CHECK_EQ(k::gemm_f32_block_threads(), 256);
  CHECK_EQ(k::gemm_f32_shared_bytes(), std::size_t{2 * 16 * 65 * 4});
  const ot_cuda::Dim3 g = k::gemm_f32_grid(65, 129);
  CHECK_EQ(g.x, 3u);
  CHECK_EQ(g.y, 2u);
}
