// kernels/adamw.cuh in the CPU execution, in every checking mode, against a
// float64 reference and against the CPU kernel (../../src/cpu/optim.cc).
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/optim.h"
#include "../kernels/adamw.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

void run(std::int64_t count, unsigned blocks, const ot::AdamWParams& h, const emu::Mode& mode) {
  const std::string what = "adamw count " + std::to_string(count) + " step " + std::to_string(h.step) + " in mode " + mode.name;
  const auto n = static_cast<std::size_t>(count);
  const auto p0 = ot_test::random_floats(n, -1.0f, 1.0f, 10 + n), grad = ot_test::random_floats(n, -3.0f, 3.0f, 11 + n);
  const auto m0 = ot_test::random_floats(n, -0.5f, 0.5f, 12 + n), v0 = ot_test::random_floats(n, 0.0f, 0.5f, 13 + n);
  auto p = p0, m = m0, v = v0;
  const k::AdamWScalars s = k::adamw_scalars(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step, h.grad_scale);
  emu::launch(ot_cuda::Dim3{blocks}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options,
              [&](auto& ctx) { k::adamw_step_f32(ctx, p.data(), grad.data(), m.data(), v.data(), count, s); });

  auto cp = p0, cm = m0, cv = v0;
  ot::adamw_step(count, cp.data(), grad.data(), cm.data(), cv.data(), h);

  const double bias1 = 1.0 - std::pow(h.beta1, double(h.step)), bias2 = 1.0 - std::pow(h.beta2, double(h.step));
  ot_test::Worst wp, wm, wv, cpw, cmw, cvw;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = h.grad_scale * grad[i];
    const double mi = h.beta1 * m0[i] + (1 - h.beta1) * g, vi = h.beta2 * v0[i] + (1 - h.beta2) * g * g;
    const double decayed = p0[i] * (1 - h.lr * h.weight_decay);
    const double step = h.lr / bias1 * mi / (std::sqrt(vi / bias2) + h.eps);
    const double pi = decayed - step, mag_p = std::abs(decayed) + std::abs(step);
    const double mag_m = std::abs(h.beta1 * m0[i]) + std::abs((1 - h.beta1) * g);
    wp.add(p[i], pi, mag_p, i);
    wm.add(m[i], mi, mag_m, i);
    wv.add(v[i], vi, vi, i);
    cpw.add(p[i], cp[i], mag_p, i);
    cmw.add(m[i], cm[i], mag_m, i);
    cvw.add(v[i], cv[i], vi, i);
  }
  EXPECT_WITHIN(wp, 1e-5, what + " param vs float64");
  EXPECT_WITHIN(wm, 1e-5, what + " m vs float64");
  EXPECT_WITHIN(wv, 1e-5, what + " v vs float64");
  EXPECT_WITHIN(cpw, 1e-6, what + " param vs CPU kernel");
  EXPECT_WITHIN(cmw, 1e-6, what + " m vs CPU kernel");
  EXPECT_WITHIN(cvw, 1e-6, what + " v vs CPU kernel");
}

}  // namespace

TEST(adamw_matches_reference_in_every_mode) {
  for (const auto& mode : ot_test::op_modes()) {
    for (std::int64_t step : {1, 7}) {
      const ot::AdamWParams h{1e-3, 0.9, 0.999, 1e-8, 0.1, step, 0.37};
      for (std::int64_t count : {1, 7, 257, 1000}) run(count, k::elementwise_blocks(count), h, mode);
      run(777, 2, h, mode);  // the grid-stride loop
    }
  }
}
