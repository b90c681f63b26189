// kernels/gemm_f32_backward.cuh in the CPU execution, in every checking mode:
// dx = dy W and dW = dy^T x, written and accumulated, against a float64
// reference and against the CPU backend's GEMM (../../src/cpu/gemm.h, ot::gemm
// with the same transposes). Random f32 data: within f32 fma accumulation
// error ((depth + 1) 2^-24 of the terms' magnitude) and <= 1e-5 relative to the
// magnitude of the summed terms (sum |products| + |prior|; elementwise
// relative error is unbounded where the terms cancel), also against ot::gemm.
// Exact data (every product and partial sum exact in f32): <= 1e-5 relative
// per element. Plus the edges (one row, empty reduction, empty output), the
// launchers on the emulated device, and gemm_f32_tile<false, false> giving
// gemm_f32_xwt's bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../src/cpu/gemm.h"
#include "../include/ot_cuda/launch.h"
#include "../kernels/gemm_f32_backward.cuh"
#include "../kernels/launchers.h"
#include "check.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

enum class Product { input, weight };

struct Shape {
  int m, n, k;
};

std::string name(Product p, const Shape& s) {
  return std::string(p == Product::input ? "backward_input " : "backward_weight ") + ot_test::shape_name(s.m, s.n, s.k);
}

bool large() {
  const char* v = std::getenv("OT_CUDA_EMU_LARGE");
  return v != nullptr && v[0] == '1';
}

// The operands of one product: dy [m, n] and the other operand, W [n, k]
// (input) or x [m, k] (weight); the output [m, k] (input) or [n, k] (weight).
struct Case {
  Product p;
  Shape s;
  std::vector<float> dy, other, prior;
  int out_rows() const { return p == Product::input ? s.m : s.n; }
  int depth() const { return p == Product::input ? s.n : s.m; }
};

// Exact data: integers / 8 in dy, integers in the other operand and the
// prior output: every product and partial sum is a multiple of 1/8 far below
// 2^21, so the f32 result is the exact one.
Case make_case(Product p, const Shape& s, std::uint64_t seed, bool exact_data, bool accumulate) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_int_distribution<int> small(-8, 8);
  auto gen = [&](float scale) { return exact_data ? static_cast<float>(small(rng)) / scale : u(rng); };
  Case c{p, s, {}, {}, {}};
  c.dy.resize(static_cast<std::size_t>(s.m) * s.n);
  c.other.resize(static_cast<std::size_t>(p == Product::input ? s.n : s.m) * s.k);
  for (auto& v : c.dy) v = gen(8.0f);
  for (auto& v : c.other) v = gen(1.0f);
  c.prior.assign(static_cast<std::size_t>(c.out_rows()) * s.k, 0.0f);
  if (accumulate) {
    for (auto& v : c.prior) v = gen(1.0f);
  }
  return c;
}

// The body in the CPU execution: out starts as the prior when accumulating,
// NaN otherwise (an element the kernel forgets to write stays NaN).
std::vector<float> run_body(const Case& c, bool accumulate, const emu::Options& options) {
  std::vector<float> out = accumulate ? c.prior : ot_test::nan_floats(c.prior.size());
  const Shape& s = c.s;
  const ot_cuda::Dim3 block{static_cast<unsigned>(k::gemm_f32_block_threads())};
  if (c.p == Product::input) {
    emu::launch(k::gemm_f32_backward_input_grid(s.m, s.k), block, k::gemm_f32_shared_bytes(), options, [&](auto& ctx) {
      k::gemm_f32_backward_input(ctx, c.dy.data(), c.other.data(), out.data(), s.m, s.n, s.k, accumulate);
    });
  } else {
    emu::launch(k::gemm_f32_backward_weight_grid(s.n, s.k), block, k::gemm_f32_shared_bytes(), options, [&](auto& ctx) {
      k::gemm_f32_backward_weight(ctx, c.dy.data(), c.other.data(), out.data(), s.m, s.n, s.k, accumulate);
    });
  }
  return out;
}

// The CPU backend: ot::gemm with beta 1 (accumulating) or 0.
std::vector<float> run_cpu(const Case& c, bool accumulate) {
  std::vector<float> out = c.prior;
  const Shape& s = c.s;
  const float beta = accumulate ? 1.0f : 0.0f;
  if (c.p == Product::input) {
    // dx[m, k] = dy[m, n] W[n, k]
    ot::gemm(
        ot::gemm_args(false, false, s.m, s.k, s.n, 1.0f, c.dy.data(), s.n, c.other.data(), s.k, beta, out.data(), s.k));
  } else {
    // dW[n, k] = dy[m, n]^T x[m, k]: A stored [m, n], transposed
    ot::gemm(
        ot::gemm_args(true, false, s.n, s.k, s.m, 1.0f, c.dy.data(), s.n, c.other.data(), s.k, beta, out.data(), s.k));
  }
  return out;
}

// The float64 reference and the magnitude of its terms, per output element.
void reference(const Case& c, bool accumulate, std::vector<double>& ref, std::vector<double>& mag) {
  const Shape& s = c.s;
  const int rows = c.out_rows(), depth = c.depth();
  ref.assign(c.prior.size(), 0.0);
  mag.assign(c.prior.size(), 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int col = 0; col < s.k; ++col) {
      double acc = 0, a = 0;
      for (int j = 0; j < depth; ++j) {
        // input: dy[r, j] W[j, col]; weight: dy[j, r] x[j, col]
        const double lhs = c.p == Product::input ? c.dy[std::size_t(r) * s.n + j] : c.dy[std::size_t(j) * s.n + r];
        const double p = lhs * double(c.other[std::size_t(j) * s.k + col]);
        acc += p;
        a += std::abs(p);
      }
      const std::size_t i = std::size_t(r) * s.k + col;
      const double prior = accumulate ? c.prior[i] : 0.0;
      ref[i] = prior + acc;
      mag[i] = std::abs(prior) + a;
    }
  }
}

struct Errors {
  double worst_bound = 0;    // |got - ref| / ((depth + 1) 2^-24 mag): <= 1 is f32 error
  double worst_mag_rel = 0;  // |got - ref| / mag
  double worst_cpu = 0;      // |got - ot::gemm| / mag
  double worst_rel = 0;      // |got - ref| / |ref| (exact data)
  bool all_written = true;
};

Errors compare(const Case& c, bool accumulate, const std::vector<float>& got, const std::vector<float>& cpu) {
  std::vector<double> ref, mag;
  reference(c, accumulate, ref, mag);
  Errors e;
  auto ratio = [](double err, double scale) { return err == 0 ? 0.0 : scale == 0 ? INFINITY : err / scale; };
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) {
      e.all_written = false;
      continue;
    }
    const double err = std::abs(double(got[i]) - ref[i]);
    e.worst_bound = std::max(e.worst_bound, ratio(err, (c.depth() + 1) * std::ldexp(1.0, -24) * mag[i]));
    e.worst_mag_rel = std::max(e.worst_mag_rel, ratio(err, mag[i]));
    e.worst_cpu = std::max(e.worst_cpu, ratio(std::abs(double(got[i]) - double(cpu[i])), mag[i]));
    e.worst_rel = std::max(e.worst_rel, ratio(err, std::abs(ref[i])));
  }
  return e;
}

void check_product(Product p, const std::vector<Shape>& shapes) {
  for (const auto& mode : ot_test::op_modes(5, 13)) {
    for (const auto& s : shapes) {
      for (bool accumulate : {false, true}) {
        const std::string what = name(p, s) + (accumulate ? " accumulating" : "") + ", mode " + mode.name;
        const std::uint64_t seed =
            7 + static_cast<std::uint64_t>(s.m * 10007 + s.n * 101 + s.k) * 4 + accumulate * 2 + (p == Product::weight);
        const Case rnd = make_case(p, s, seed, false, accumulate);
        const Errors e = compare(rnd, accumulate, run_body(rnd, accumulate, mode.options), run_cpu(rnd, accumulate));
        if (!e.all_written || !(e.worst_bound <= 1.0) || !(e.worst_mag_rel <= 1e-5) || !(e.worst_cpu <= 1e-5)) {
          ot_test::fail(__FILE__, __LINE__,
                        what + " random data: error / f32 bound " + std::to_string(e.worst_bound) +
                            ", relative to the terms' magnitude " + std::to_string(e.worst_mag_rel) +
                            ", against ot::gemm " + std::to_string(e.worst_cpu) +
                            (e.all_written ? "" : ", elements not written"));
        }
        const Case exact = make_case(p, s, seed + 1, true, accumulate);
        const Errors x =
            compare(exact, accumulate, run_body(exact, accumulate, mode.options), run_cpu(exact, accumulate));
        if (!x.all_written || !(x.worst_rel <= 1e-5) || !(x.worst_cpu <= 1e-5)) {
          ot_test::fail(__FILE__, __LINE__,
                        what + " exact data: relative error " + std::to_string(x.worst_rel) + ", against ot::gemm " +
                            std::to_string(x.worst_cpu) + (x.all_written ? "" : ", elements not written"));
        }
      }
    }
  }
}

// Odd sizes, none a multiple of 32 save one; a reduction within one stage of
// 16, exactly one, and several; output tiles cut at every edge, more than one
// tile each way; one row of dy (m == 1) for both products.
std::vector<Shape> shapes() {
  std::vector<Shape> v{{1, 1, 1}, {1, 37, 70}, {3, 5, 7}, {17, 9, 16}, {16, 33, 8}, {70, 65, 33}, {40, 3, 129}};
  if (large()) v.push_back({1024, 256, 320});
  return v;
}

void expect_ok(cudaError_t e, const std::string& what, int line) {
  if (e != cudaSuccess) ot_test::fail(__FILE__, line, what + ": launcher returned " + std::to_string(int(e)));
}
#define EXPECT_OK(call, what) expect_ok((call), (what), __LINE__)

// Runs fn with the emulated device's options set to `options`, then restores them.
template <class F>
void on_device(const emu::Options& options, F fn) {
  const emu::Options saved = emu::device_options();
  emu::device_options() = options;
  try {
    fn();
  } catch (...) {
    emu::device_options() = saved;
    throw;
  }
  emu::device_options() = saved;
}

}  // namespace

TEST(gemm_f32_backward_input_matches_reference_in_every_mode) { check_product(Product::input, shapes()); }

TEST(gemm_f32_backward_weight_matches_reference_in_every_mode) { check_product(Product::weight, shapes()); }

TEST(gemm_f32_backward_empty_reduction) {
  // A reduction of length 0 (n for dx, m for dW) writes zeros, or leaves the
  // output as it is when accumulating; the operands are never read.
  const auto options = emu::checking_modes(1)[4].options;
  const ot_cuda::Dim3 block{static_cast<unsigned>(k::gemm_f32_block_threads())};
  for (bool accumulate : {false, true}) {
    const std::vector<float> before{1.5f, -2.0f, 3.25f, 0.0f, 4.0f, -1.0f};
    std::vector<float> dx = before, dw = before;
    emu::launch(k::gemm_f32_backward_input_grid(2, 3), block, k::gemm_f32_shared_bytes(), options,
                [&](auto& ctx) { k::gemm_f32_backward_input(ctx, nullptr, nullptr, dx.data(), 2, 0, 3, accumulate); });
    emu::launch(k::gemm_f32_backward_weight_grid(2, 3), block, k::gemm_f32_shared_bytes(), options,
                [&](auto& ctx) { k::gemm_f32_backward_weight(ctx, nullptr, nullptr, dw.data(), 0, 2, 3, accumulate); });
    for (std::size_t i = 0; i < before.size(); ++i) {
      CHECK_EQ(dx[i], accumulate ? before[i] : 0.0f);
      CHECK_EQ(dw[i], accumulate ? before[i] : 0.0f);
    }
  }
}

TEST(gemm_f32_backward_launchers_match_their_bodies_and_validate) {
  // Through gemm_f32_backward.cu on the emulated device, in every mode: the
  // launch shape a GPU gets gives the bits of the body launched by hand.
  for (Product p : {Product::input, Product::weight}) {
    for (const Shape& s : {Shape{1, 37, 70}, Shape{70, 65, 33}}) {
      for (bool accumulate : {false, true}) {
        const Case c = make_case(p, s, 31 + s.m, false, accumulate);
        const std::vector<float> by_hand = run_body(c, accumulate, {});
        for (const auto& mode : ot_test::op_modes(9, 19)) {
          std::vector<float> out = accumulate ? c.prior : ot_test::nan_floats(c.prior.size());
          const std::string what = name(p, s) + ", mode " + mode.name;
          on_device(mode.options, [&] {
            EXPECT_OK(p == Product::input ? ot_cuda_gemm_f32_backward_input(c.dy.data(), c.other.data(), out.data(),
                                                                            s.m, s.n, s.k, accumulate, nullptr)
                                          : ot_cuda_gemm_f32_backward_weight(c.dy.data(), c.other.data(), out.data(),
                                                                             s.m, s.n, s.k, accumulate, nullptr),
                      what);
          });
          if (out != by_hand) ot_test::fail(__FILE__, __LINE__, what + ": launcher differs from the body");
        }
      }
    }
  }

  // Validation and empty work: negative sizes are invalid; an empty output,
  // or an empty reduction when accumulating, launches nothing.
  std::vector<float> a(8, 1.0f), b(8, 1.0f), out(8, kNaN);
  for (auto* f : {&ot_cuda_gemm_f32_backward_input, &ot_cuda_gemm_f32_backward_weight}) {
    CHECK_EQ(f(a.data(), b.data(), out.data(), -1, 2, 2, 0, nullptr), cudaErrorInvalidValue);
    CHECK_EQ(f(a.data(), b.data(), out.data(), 2, -1, 2, 0, nullptr), cudaErrorInvalidValue);
    CHECK_EQ(f(a.data(), b.data(), out.data(), 2, 2, -1, 0, nullptr), cudaErrorInvalidValue);
    CHECK_EQ(f(nullptr, nullptr, out.data(), 2, 2, 0, 0, nullptr), cudaSuccess);
  }
  CHECK_EQ(ot_cuda_gemm_f32_backward_input(nullptr, nullptr, out.data(), 0, 2, 2, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_gemm_f32_backward_input(nullptr, nullptr, out.data(), 2, 0, 2, 1, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_gemm_f32_backward_weight(nullptr, nullptr, out.data(), 2, 0, 2, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_gemm_f32_backward_weight(nullptr, nullptr, out.data(), 0, 2, 2, 1, nullptr), cudaSuccess);
  for (float v : out) CHECK(std::isnan(v));
  // An empty reduction that overwrites launches and writes zeros.
  CHECK_EQ(ot_cuda_gemm_f32_backward_input(nullptr, nullptr, out.data(), 2, 0, 3, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_gemm_f32_backward_weight(nullptr, nullptr, out.data() + 6, 0, 1, 2, 0, nullptr), cudaSuccess);
  for (float v : out) CHECK_EQ(v, 0.0f);
}

TEST(gemm_f32_tile_untransposed_is_gemm_f32_xwt) {
  // The generalised tile with neither operand transposed is gemm_f32_xwt, bit
  // for bit (same fma order), so gemm_f32.cuh could call it.
  const Shape s{65, 70, 33};
  const auto x = ot_test::random_floats(std::size_t(s.m) * s.k, -2, 2, 5);
  const auto w = ot_test::random_floats(std::size_t(s.n) * s.k, -2, 2, 6);
  std::vector<float> a = ot_test::nan_floats(std::size_t(s.m) * s.n), b = a;
  const auto options = ot_test::op_modes().back().options;
  const ot_cuda::Dim3 block{static_cast<unsigned>(k::gemm_f32_block_threads())};
  emu::launch(k::gemm_f32_grid(s.m, s.n), block, k::gemm_f32_shared_bytes(), options,
              [&](auto& ctx) { k::gemm_f32_xwt(ctx, x.data(), w.data(), a.data(), s.m, s.n, s.k, false); });
  emu::launch(k::gemm_f32_grid(s.m, s.n), block, k::gemm_f32_shared_bytes(), options, [&](auto& ctx) {
    k::gemm_f32_tile<false, false>(ctx, x.data(), s.k, w.data(), s.k, b.data(), s.m, s.n, s.k, false);
  });
  CHECK(a == b);
}

TEST(gemm_f32_backward_launch_shape) {
  // Output tiles of 64 x 64: dx [m, k] and dW [n, k], columns on x.
  const ot_cuda::Dim3 gi = k::gemm_f32_backward_input_grid(65, 129);
  CHECK_EQ(gi.x, 3u);
  CHECK_EQ(gi.y, 2u);
  const ot_cuda::Dim3 gw = k::gemm_f32_backward_weight_grid(1, 64);
  CHECK_EQ(gw.x, 1u);
  CHECK_EQ(gw.y, 1u);
}
