// kernels/swiglu.cuh in the CPU execution, in every checking mode, against a
// float64 reference and against the CPU kernel (../../src/cpu/activation.cc).
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/elementwise.h"
#include "../kernels/swiglu.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

void run(std::int64_t count, unsigned blocks, const emu::Mode& mode) {
  const std::string what = "swiglu count " + std::to_string(count) + " blocks " + std::to_string(blocks) + " in mode " + mode.name;
  const auto n = static_cast<std::size_t>(count);
  const auto gate = ot_test::random_floats(n, -8.0f, 8.0f, 1 + n), up = ot_test::random_floats(n, -2.0f, 2.0f, 2 + n);
  const auto dy = ot_test::random_floats(n, -2.0f, 2.0f, 3 + n);
  auto out = ot_test::nan_floats(n), d_gate = ot_test::nan_floats(n), d_up = ot_test::nan_floats(n);
  emu::launch(ot_cuda::Dim3{blocks}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options,
              [&](auto& ctx) { k::swiglu_forward_f32(ctx, gate.data(), up.data(), out.data(), count); });
  emu::launch(ot_cuda::Dim3{blocks}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options, [&](auto& ctx) {
    k::swiglu_backward_f32(ctx, dy.data(), gate.data(), up.data(), d_gate.data(), d_up.data(), count);
  });

  std::vector<float> cpu_out(n), cpu_dg(n), cpu_du(n);
  ot::swiglu_forward(count, gate.data(), up.data(), cpu_out.data());
  ot::swiglu_backward(count, dy.data(), gate.data(), up.data(), cpu_dg.data(), cpu_du.data());

  ot_test::Worst w_out, w_dg, w_du, c_out, c_dg, c_du;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = gate[i], u = up[i], d = dy[i], sg = sigmoid(g);
    const double ref_out = g * sg * u, ref_du = d * g * sg;
    const double ref_dg = d * u * sg * (1.0 + g * (1.0 - sg));
    const double mag_dg = std::abs(d * u * sg) * (1.0 + std::abs(g) * (1.0 - sg));
    w_out.add(out[i], ref_out, ref_out, i);
    w_du.add(d_up[i], ref_du, ref_du, i);
    w_dg.add(d_gate[i], ref_dg, mag_dg, i);
    c_out.add(out[i], cpu_out[i], ref_out, i);
    c_du.add(d_up[i], cpu_du[i], ref_du, i);
    c_dg.add(d_gate[i], cpu_dg[i], mag_dg, i);
  }
  EXPECT_WITHIN(w_out, 1e-5, what + " out vs float64");
  EXPECT_WITHIN(w_du, 1e-5, what + " d_up vs float64");
  EXPECT_WITHIN(w_dg, 1e-5, what + " d_gate vs float64");
  EXPECT_WITHIN(c_out, 1e-5, what + " out vs CPU kernel");
  EXPECT_WITHIN(c_du, 1e-5, what + " d_up vs CPU kernel");
  EXPECT_WITHIN(c_dg, 1e-5, what + " d_gate vs CPU kernel");
}

}  // namespace

TEST(swiglu_matches_reference_in_every_mode) {
  for (const auto& mode : ot_test::op_modes()) {
    for (std::int64_t count : {1, 7, 255, 257, 1000, 3001}) run(count, k::elementwise_blocks(count), mode);
    run(1001, 2, mode);  // fewer blocks than elements: the grid-stride loop
  }
}

TEST(swiglu_extremes) {
  // σ(−g) underflows / overflows exp: silu(±100) must be 0 and 100, not NaN.
  const std::vector<float> gate{-100.0f, 100.0f, 0.0f}, up{1.0f, 1.0f, 1.0f}, dy{1.0f, 1.0f, 1.0f};
  auto out = ot_test::nan_floats(3), dg = ot_test::nan_floats(3), du = ot_test::nan_floats(3);
  emu::launch(ot_cuda::Dim3{1}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, emu::Options{}, [&](auto& ctx) {
    k::swiglu_forward_f32(ctx, gate.data(), up.data(), out.data(), 3);
    k::swiglu_backward_f32(ctx, dy.data(), gate.data(), up.data(), dg.data(), du.data(), 3);
  });
  CHECK(std::abs(out[0]) < 1e-30f);
  CHECK_EQ(out[1], 100.0f);
  CHECK_EQ(out[2], 0.0f);
  CHECK(std::abs(dg[0]) < 1e-30f);
  CHECK_EQ(dg[1], 1.0f);
  CHECK_EQ(dg[2], 0.5f);
}
