// kernels/rmsnorm_backward.cuh in the CPU execution, in every checking mode,
// against a float64 reference and the CPU kernel (../../src/cpu/norm.cc), with
// and without a stored inv_rms, overwriting and accumulating dx, with and
// without dw.
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/elementwise.h"
#include "../kernels/rmsnorm_backward.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

struct Variant {
  bool stored_r, accumulate, with_dw;
};

void run(int rows, int cols, const Variant& v, const emu::Mode& mode) {
  const std::string what = "rmsnorm_backward " + std::to_string(rows) + "x" + std::to_string(cols) +
                           (v.stored_r ? " stored-r" : " recomputed-r") + (v.accumulate ? " accumulate" : "") +
                           (v.with_dw ? " dw" : " no-dw") + " in mode " + mode.name;
  const std::size_t size = static_cast<std::size_t>(rows) * cols;
  const auto x = ot_test::random_floats(size, -2.0f, 2.0f, 50 + size), g = ot_test::random_floats(size, -1.0f, 1.0f, 51 + size);
  const auto w = ot_test::random_floats(static_cast<std::size_t>(cols), 0.5f, 1.5f, 52 + cols);
  const auto dx0 = v.accumulate ? ot_test::random_floats(size, -1.0f, 1.0f, 53) : ot_test::nan_floats(size);
  const auto dw0 = ot_test::random_floats(static_cast<std::size_t>(cols), -1.0f, 1.0f, 54);
  const float eps = 1e-5f;

  std::vector<double> r(static_cast<std::size_t>(rows));
  std::vector<float> r_stored(r.size());
  for (int i = 0; i < rows; ++i) {
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += double(x[std::size_t(i) * cols + c]) * x[std::size_t(i) * cols + c];
    r_stored[i] = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
    r[i] = v.stored_r ? double(r_stored[i]) : 1.0 / std::sqrt(ss / cols + double(eps));
  }

  auto dx = dx0, dw = dw0;
  const int threads = k::rmsnorm_backward_block_threads(cols);
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(rows)}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
              k::rmsnorm_backward_shared_bytes(threads), mode.options, [&](auto& ctx) {
                k::rmsnorm_backward_f32(ctx, x.data(), w.data(), v.stored_r ? r_stored.data() : nullptr, eps,
                                        g.data(), dx.data(), v.accumulate, v.with_dw ? dw.data() : nullptr, cols);
              });
  auto cdx = dx0, cdw = dw0;
  ot::rmsnorm_backward(rows, cols, x.data(), w.data(), v.stored_r ? r_stored.data() : nullptr, eps, g.data(),
                       cdx.data(), v.accumulate, v.with_dw ? cdw.data() : nullptr);

  ot_test::Worst wdx, wdw, cdxw, cdww;
  std::vector<double> ref_dw(dw0.begin(), dw0.end()), mag_dw(static_cast<std::size_t>(cols));
  for (int c = 0; c < cols; ++c) mag_dw[c] = std::abs(ref_dw[c]);
  for (int i = 0; i < rows; ++i) {
    const std::size_t o = std::size_t(i) * cols;
    double dot = 0, dot_mag = 0;
    for (int c = 0; c < cols; ++c) {
      dot += double(g[o + c]) * w[c] * x[o + c];
      dot_mag += std::abs(double(g[o + c]) * w[c] * x[o + c]);
    }
    const double ri = r[i], coef = ri * ri * ri / cols;
    for (int c = 0; c < cols; ++c) {
      const double first = ri * w[c] * g[o + c], second = coef * x[o + c] * dot;
      const double base = v.accumulate ? double(dx0[o + c]) : 0.0;
      const double ref = base + first - second;
      const double mag = std::abs(base) + std::abs(first) + std::abs(coef * x[o + c]) * dot_mag;
      wdx.add(dx[o + c], ref, mag, o + c);
      cdxw.add(dx[o + c], cdx[o + c], mag, o + c);
      ref_dw[c] += double(g[o + c]) * x[o + c] * ri;
      mag_dw[c] += std::abs(double(g[o + c]) * x[o + c] * ri);
    }
  }
  for (int c = 0; c < cols; ++c) {
    if (v.with_dw) {
      wdw.add(dw[c], ref_dw[c], mag_dw[c], c);
      cdww.add(dw[c], cdw[c], mag_dw[c], c);
    } else {
      wdw.add(dw[c], dw0[c], 0, c);  // untouched
    }
  }
  EXPECT_WITHIN(wdx, 1e-5, what + " dx vs float64");
  EXPECT_WITHIN(wdw, 1e-5, what + " dw vs float64");
  EXPECT_WITHIN(cdxw, 1e-5, what + " dx vs CPU kernel");
  EXPECT_WITHIN(cdww, 1e-5, what + " dw vs CPU kernel");
}

}  // namespace

TEST(rmsnorm_backward_matches_reference_in_every_mode) {
  struct Shape {
    int rows, cols;
  };
  const std::vector<Shape> shapes{{1, 1}, {3, 7}, {2, 32}, {5, 130}, {4, 1000}};
  const std::vector<Variant> variants{{false, false, true}, {true, true, true}, {true, false, false}};
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& s : shapes) {
      for (const auto& v : variants) run(s.rows, s.cols, v, mode);
    }
  }
}
