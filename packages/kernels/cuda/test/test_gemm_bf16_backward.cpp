// kernels/gemm_bf16.cuh's backward products in the CPU execution, in every
// checking mode, against float64 references over the same bf16 inputs:
//   dx[m, k]  = dy[m, n] W[n, k]       (gemm_bf16_backward_input)
//   dW[n, k] += dy[m, n]^T x[m, k]     (gemm_bf16_backward_weight, into f32)
// <= 1e-5 relative where every product and partial sum is exact in f32;
// within f32 accumulation error (and <= 2e-2 relative, issue 46) on random
// bf16 data.
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
  double worst_bound = 0;  // |out - ref| / ((depth + 1) * 2^-24 * (sum |products| + |prior|)): <= 1 is f32 error
  double worst_rel = 0;    // |out - ref| / max(|ref|, 1e-3 * max |ref|)
  bool all_written = true;
};

enum class Product { kInput, kWeight };

Result run(Product product, const Shape& s, const ot_cuda::emu::Options& options, std::uint64_t seed,
           bool exact_data) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_int_distribution<int> small(-8, 8);
  // Exact data: integers / 8 in dy, integers in W and x (and in dW's prior
  // value): every product and partial sum is a multiple of 1/8 far below 2^21.
  auto gen = [&](bool scale) {
    return exact_data ? to_bf16(static_cast<float>(small(rng)) / (scale ? 8.0f : 1.0f)) : to_bf16(u(rng));
  };
  const std::size_t m = s.m, n = s.n, kk = s.k;
  std::vector<std::uint16_t> dy(m * n), other(product == Product::kInput ? n * kk : m * kk);
  for (auto& v : dy) v = gen(true);
  for (auto& v : other) v = gen(false);

  // Output: dx (m x k, poisoned) or dW (n x k, a prior value to accumulate onto).
  const std::size_t rows = product == Product::kInput ? m : n, cols = kk;
  const std::size_t depth = product == Product::kInput ? n : m;
  std::vector<float> out(rows * cols, std::numeric_limits<float>::quiet_NaN());
  std::vector<double> prior(out.size(), 0.0);
  if (product == Product::kWeight) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = exact_data ? static_cast<float>(small(rng)) : u(rng);
      prior[i] = out[i];
    }
  }

  ot_cuda::emu::launch(k::gemm_bf16_grid(static_cast<int>(rows), static_cast<int>(cols)),
                       ot_cuda::Dim3{static_cast<unsigned>(k::gemm_bf16_block_threads())},
                       k::gemm_bf16_shared_bytes(), options, [&](auto& ctx) {
                         if (product == Product::kInput) {
                           k::gemm_bf16_backward_input(ctx, dy.data(), other.data(), out.data(), s.m, s.n, s.k);
                         } else {
                           k::gemm_bf16_backward_weight(ctx, dy.data(), other.data(), out.data(), s.m, s.n, s.k);
                         }
                       });

  std::vector<double> ref(out.size()), mag(out.size());
  double max_ref = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      double acc = 0, a = 0;
      for (std::size_t j = 0; j < depth; ++j) {
        const double p = product == Product::kInput ? from_bf16(dy[r * n + j]) * from_bf16(other[j * kk + c])
                                                    : from_bf16(dy[j * n + r]) * from_bf16(other[j * kk + c]);
        acc += p;
        a += std::abs(p);
      }
      const std::size_t i = r * cols + c;
      ref[i] = prior[i] + acc;
      mag[i] = std::abs(prior[i]) + a;
      max_ref = std::max(max_ref, std::abs(ref[i]));
    }
  }
  Result res;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) {
      res.all_written = false;
      continue;
    }
    const double err = std::abs(double(out[i]) - ref[i]);
    const double bound = static_cast<double>(depth + 1) * std::ldexp(1.0, -24) * mag[i];
    res.worst_bound = std::max(res.worst_bound, err == 0 ? 0.0 : bound == 0 ? INFINITY : err / bound);
    const double floor = std::max(std::abs(ref[i]), 1e-3 * max_ref);
    res.worst_rel = std::max(res.worst_rel, err == 0 ? 0.0 : floor == 0 ? INFINITY : err / floor);
  }
  return res;
}

std::string name(const Shape& s) { return ot_test::shape_name(s.m, s.n, s.k); }

std::vector<ot_cuda::emu::Mode> modes() { return ot_test::op_modes(5, 13); }

}  // namespace

TEST(gemm_bf16_backward_matches_reference_in_every_mode) {
  // Odd m, n, k; reductions (n for dx, m for dW) not a multiple of 16 or 32,
  // of one stage and several; outputs cut at every tile edge, more than one
  // tile in each direction.
  std::vector<Shape> shapes{{1, 1, 1}, {3, 5, 7}, {17, 9, 16}, {16, 32, 8}, {70, 33, 48}, {40, 65, 129},
                            {100, 7, 3}};
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    shapes.push_back({512, 256, 320});
  }
  for (const auto& mode : modes()) {
    for (const auto& s : shapes) {
      for (Product product : {Product::kInput, Product::kWeight}) {
        const std::string what = std::string(product == Product::kInput ? "backward_input " : "backward_weight ") +
                                 name(s) + ", mode " + mode.name;
        const std::uint64_t seed = 7 + static_cast<std::uint64_t>(s.m * 1000 + s.n * 10 + s.k);
        const Result exact = run(product, s, mode.options, seed, true);
        if (!exact.all_written || !(exact.worst_rel <= 1e-5)) {
          ot_test::fail(__FILE__, __LINE__,
                        "gemm_bf16 " + what + " exact data: relative error " + std::to_string(exact.worst_rel) +
                            (exact.all_written ? "" : ", elements not written"));
        }
        const Result rnd = run(product, s, mode.options, seed + 1, false);
        if (!rnd.all_written || !(rnd.worst_bound <= 1.0) || !(rnd.worst_rel <= 2e-2)) {
          ot_test::fail(__FILE__, __LINE__,
                        "gemm_bf16 " + what + " random data: error / f32 bound " + std::to_string(rnd.worst_bound) +
                            ", relative " + std::to_string(rnd.worst_rel) +
                            (rnd.all_written ? "" : ", elements not written"));
        }
      }
    }
  }
}

TEST(gemm_bf16_backward_empty_reductions) {
  // dx with n == 0 is zeros; dW with m == 0 keeps its prior value.
  std::vector<float> dx(6, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> dw{1.5f, -2.0f, 3.25f, 0.0f, 4.0f, -1.0f};
  const std::vector<float> before = dw;
  const auto options = ot_cuda::emu::checking_modes(1)[4].options;
  ot_cuda::emu::launch(k::gemm_bf16_grid(2, 3), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_bf16_block_threads())},
                       k::gemm_bf16_shared_bytes(), options,
                       [&](auto& ctx) { k::gemm_bf16_backward_input(ctx, nullptr, nullptr, dx.data(), 2, 0, 3); });
  for (float v : dx) CHECK_EQ(v, 0.0f);
  ot_cuda::emu::launch(k::gemm_bf16_grid(2, 3), ot_cuda::Dim3{static_cast<unsigned>(k::gemm_bf16_block_threads())},
                       k::gemm_bf16_shared_bytes(), options,
                       [&](auto& ctx) { k::gemm_bf16_backward_weight(ctx, nullptr, nullptr, dw.data(), 0, 2, 3); });
  for (std::size_t i = 0; i < dw.size(); ++i) CHECK_EQ(dw[i], before[i]);
}
