// kernels/gemm_bf16.cuh in the CPU execution, in every checking mode, against
// a float64 reference over the same bf16 inputs: bit-for-bit (<= 1e-5
// relative) where every product and partial sum is exact in f32, within f32
// accumulation error (and <= 2e-2 relative, issue 46) on random bf16 data.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../kernels/gemm_bf16.cuh"
#include "bf16.h"
#include "check.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;

struct Shape {
  int m, n, k;
};

using ot_test::from_bf16;
using ot_test::to_bf16;

struct Result {
  double worst_bound = 0;  // |y - ref| / (k * 2^-24 * sum |x w|): <= 1 is f32 accumulation error
  double worst_rel = 0;    // |y - ref| / max(|ref|, 1e-3 * max |ref|)
  bool all_written = true;
};

Result run(const Shape& s, const ot_cuda::emu::Options& options, std::uint64_t seed, bool exact_data) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_int_distribution<int> small(-8, 8);
  // Exact data: integers / 8 in x, integers in W: products and every partial
  // sum are multiples of 1/8 far below 2^21, exact in f32 in any order.
  auto gen = [&](bool scale) {
    return exact_data ? to_bf16(static_cast<float>(small(rng)) / (scale ? 8.0f : 1.0f)) : to_bf16(u(rng));
  };
  std::vector<std::uint16_t> x(static_cast<std::size_t>(s.m) * s.k), w(static_cast<std::size_t>(s.n) * s.k);
  for (auto& v : x) v = gen(true);
  for (auto& v : w) v = gen(false);
  std::vector<float> y(static_cast<std::size_t>(s.m) * s.n, std::numeric_limits<float>::quiet_NaN());

  ot_cuda::emu::launch(k::gemm_bf16_grid(s.m, s.n), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_bf16_block_threads())},
                       k::gemm_bf16_shared_bytes(), options, [&](auto& ctx) {
                         k::gemm_bf16_xwt(ctx, x.data(), w.data(), y.data(), s.m, s.n, s.k);
                       });

  std::vector<double> ref(y.size()), mag(y.size());
  double max_ref = 0;
  for (int r = 0; r < s.m; ++r) {
    for (int c = 0; c < s.n; ++c) {
      double acc = 0, a = 0;
      for (int i = 0; i < s.k; ++i) {
        const double p = from_bf16(x[std::size_t(r) * s.k + i]) * from_bf16(w[std::size_t(c) * s.k + i]);
        acc += p;
        a += std::abs(p);
      }
      ref[std::size_t(r) * s.n + c] = acc;
      mag[std::size_t(r) * s.n + c] = a;
      max_ref = std::max(max_ref, std::abs(acc));
    }
  }
  Result res;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(y[i])) {
      res.all_written = false;
      continue;
    }
    const double err = std::abs(double(y[i]) - ref[i]);
    const double bound = s.k * std::ldexp(1.0, -24) * mag[i];
    res.worst_bound = std::max(res.worst_bound, err == 0 ? 0.0 : bound == 0 ? INFINITY : err / bound);
    const double floor = std::max(std::abs(ref[i]), 1e-3 * max_ref);
    res.worst_rel = std::max(res.worst_rel, err == 0 ? 0.0 : floor == 0 ? INFINITY : err / floor);
  }
  return res;
}

std::string name(const Shape& s) { return ot_test::shape_name(s.m, s.n, s.k); }

std::vector<ot_cuda::emu::Mode> modes() { return ot_test::op_modes(3, 11); }

}  // namespace

TEST(gemm_bf16_matches_reference_in_every_mode) {
  // Odd m and n, k not a multiple of 16 or 32, tiles cut at every edge, more
  // than one tile in each direction, a k of one stage and of several.
  std::vector<Shape> shapes{{1, 1, 1}, {3, 5, 7}, {17, 9, 16}, {16, 8, 32}, {33, 70, 48}, {65, 129, 40},
                            {7, 3, 100}};
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    shapes.push_back({256, 320, 1024});
  }
  for (const auto& mode : modes()) {
    for (const auto& s : shapes) {
      const std::uint64_t seed = 42 + static_cast<std::uint64_t>(s.m * 1000 + s.n * 10 + s.k);
      const Result exact = run(s, mode.options, seed, true);
      if (!exact.all_written || !(exact.worst_rel <= 1e-5)) {
        ot_test::fail(__FILE__, __LINE__,
                      "gemm_bf16 " + name(s) + " exact data, mode " + mode.name + ": relative error " +
                          std::to_string(exact.worst_rel) + (exact.all_written ? "" : ", elements not written"));
      }
      const Result rnd = run(s, mode.options, seed + 1, false);
      if (!rnd.all_written || !(rnd.worst_bound <= 1.0) || !(rnd.worst_rel <= 2e-2)) {
        ot_test::fail(__FILE__, __LINE__,
                      "gemm_bf16 " + name(s) + " random data, mode " + mode.name + ": error / f32 bound " +
                          std::to_string(rnd.worst_bound) + ", relative " + std::to_string(rnd.worst_rel) +
                          (rnd.all_written ? "" : ", elements not written"));
      }
    }
  }
}

TEST(gemm_bf16_k_zero_writes_zeros) {
  std::vector<float> y(6, std::numeric_limits<float>::quiet_NaN());
  ot_cuda::emu::launch(k::gemm_bf16_grid(2, 3), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_bf16_block_threads())},
                       k::gemm_bf16_shared_bytes(), ot_cuda::emu::checking_modes(1)[4].options,
                       [&](auto& ctx) { k::gemm_bf16_xwt(ctx, nullptr, nullptr, y.data(), 2, 3, 0); });
  for (float v : y) CHECK_EQ(v, 0.0f);
}

TEST(gemm_bf16_launch_shape) {
  CHECK_EQ(k::gemm_bf16_block_threads(), 128);
  CHECK_EQ(k::gemm_bf16_shared_bytes(), std::size_t{(64 + 64) * 20 * 4});
  const ot_cuda::Dim3 g = k::gemm_bf16_grid(65, 129);
  CHECK_EQ(g.x, 3u);
  CHECK_EQ(g.y, 2u);
}
