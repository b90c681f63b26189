// kernels/rope.cuh in the CPU execution, in every checking mode, against a
// float64 reference and the CPU kernel (../../src/cpu/rope.cc): forward, and
// backward as the transpose of the forward map.
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/elementwise.h"
#include "../kernels/rope.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

struct Shape {
  int n, heads, head_dim, rot_half;
};

void run(const Shape& s, bool inverse, const emu::Mode& mode) {
  const std::string what = std::string("rope ") + (inverse ? "backward " : "forward ") + std::to_string(s.n) + "x" +
                           std::to_string(s.heads) + "x" + std::to_string(s.head_dim) + " rot_half " +
                           std::to_string(s.rot_half) + " in mode " + mode.name;
  const std::size_t size = static_cast<std::size_t>(s.n) * s.heads * s.head_dim;
  const auto x0 = ot_test::random_floats(size, -2.0f, 2.0f, 30 + size + inverse);
  std::vector<std::int32_t> positions(static_cast<std::size_t>(s.n));
  for (int i = 0; i < s.n; ++i) positions[i] = i == 0 ? 0 : i == 1 ? 131071 : (i * 977) % 4096;
  // Llama's frequencies, base 10000 over the rotated width.
  std::vector<float> inv_freq(static_cast<std::size_t>(s.rot_half));
  for (int k2 = 0; k2 < s.rot_half; ++k2) inv_freq[k2] = static_cast<float>(std::pow(10000.0, -double(k2) / s.rot_half));
  const float scale = 1.25f;

  auto x = x0;
  const int threads = k::rope_block_threads(s.heads, s.rot_half);
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(s.n)}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
              k::rope_shared_bytes(s.rot_half), mode.options, [&](auto& ctx) {
                k::rope_f32(ctx, x.data(), positions.data(), inv_freq.data(), s.heads, s.head_dim, s.rot_half, scale,
                            inverse);
              });
  auto cpu = x0;
  ot::rope_apply(s.n, s.heads, s.head_dim, cpu.data(), positions.data(), inv_freq.data(), s.rot_half, scale, inverse);

  ot_test::Worst w, c;
  int passthrough_changed = 0;
  const double sign = inverse ? -1.0 : 1.0;
  for (int i = 0; i < s.n; ++i) {
    for (int h = 0; h < s.heads; ++h) {
      const std::size_t base = (static_cast<std::size_t>(i) * s.heads + h) * s.head_dim;
      for (int kk = 0; kk < s.rot_half; ++kk) {
        const double angle = double(positions[i]) * double(inv_freq[kk]);
        const double cs = scale * std::cos(angle), sn = sign * scale * std::sin(angle);
        const double a = x0[base + kk], b = x0[base + s.rot_half + kk];
        const std::size_t ia = base + kk, ib = ia + s.rot_half;
        const double mag = std::abs(a * cs) + std::abs(b * sn), mag_b = std::abs(b * cs) + std::abs(a * sn);
        w.add(x[ia], a * cs - b * sn, mag, ia);
        w.add(x[ib], b * cs + a * sn, mag_b, ib);
        c.add(x[ia], cpu[ia], mag, ia);
        c.add(x[ib], cpu[ib], mag_b, ib);
      }
      for (int d = 2 * s.rot_half; d < s.head_dim; ++d) passthrough_changed += !(x[base + d] == x0[base + d]);
    }
  }
  EXPECT_WITHIN(w, 1e-5, what + " vs float64");
  EXPECT_WITHIN(c, 1e-5, what + " vs CPU kernel");
  if (passthrough_changed != 0) ot_test::fail(__FILE__, __LINE__, what + ": dimensions past 2·rot_half changed");
}

}  // namespace

TEST(rope_matches_reference_in_every_mode) {
  const std::vector<Shape> shapes{{1, 1, 2, 1}, {3, 2, 8, 4}, {5, 3, 11, 3}, {4, 7, 64, 32}, {2, 5, 130, 65}};
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& s : shapes) {
      run(s, false, mode);
      run(s, true, mode);
    }
  }
}

TEST(rope_backward_is_the_transpose) {
  // <R x, y> = <x, Rᵀ y> for the forward R and the backward Rᵀ.
  const Shape s{3, 2, 10, 4};
  const std::size_t size = 3 * 2 * 10;
  const auto x0 = ot_test::random_floats(size, -1.0f, 1.0f, 7), y0 = ot_test::random_floats(size, -1.0f, 1.0f, 8);
  const std::vector<std::int32_t> positions{5, 70000, 12};
  const std::vector<float> inv_freq{1.0f, 0.1f, 0.01f, 0.001f};
  auto rx = x0, ty = y0;
  for (auto [buf, inverse] : {std::pair{&rx, false}, std::pair{&ty, true}}) {
    emu::launch(ot_cuda::Dim3{3}, ot_cuda::Dim3{static_cast<unsigned>(k::rope_block_threads(2, 4))},
                k::rope_shared_bytes(4), emu::Options{}, [&](auto& ctx) {
                  k::rope_f32(ctx, buf->data(), positions.data(), inv_freq.data(), s.heads, s.head_dim, s.rot_half,
                              0.75f, inverse);
                });
  }
  double lhs = 0, rhs = 0, mag = 0;
  for (std::size_t i = 0; i < size; ++i) {
    lhs += double(rx[i]) * y0[i];
    rhs += double(x0[i]) * ty[i];
    mag += std::abs(double(x0[i]) * y0[i]);
  }
  CHECK(std::abs(lhs - rhs) <= 1e-5 * mag);
}

TEST(rope_block_shape) {
  CHECK_EQ(k::rope_block_threads(1, 1), 32);
  CHECK_EQ(k::rope_block_threads(32, 64), 256);
  CHECK_EQ(k::rope_shared_bytes(64), std::size_t{512});
}
