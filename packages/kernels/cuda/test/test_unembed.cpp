// kernels/unembed.cuh in the CPU execution, in every checking mode, against a
// float64 reference and the CPU backend (../../src/cpu/softmax.cc:
// ot::unembed_logprobs and its backward).
//
// Errors are relative to the magnitude of the terms (op_check.h): a logit's is
// Σ_c |h·w|, lse is 1-Lipschitz in the logits so its own is the row's largest
// logit magnitude, and a gradient element's is Σ_j |G_ij|·|other operand| plus
// the prior value it is added to.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../../src/cpu/loss.h"
#include "../include/ot_cuda/launch.h"
#include "../kernels/launchers.h"
#include "../kernels/unembed.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

struct Shape {
  int n, d, vocab;
};

struct Outputs {
  std::vector<float> lp, lse, dh, dw;
};

// The four kernels as the launchers run them (workspace poisoned with NaN).
Outputs run_kernels(const Shape& s, const std::vector<float>& h, const std::vector<float>& w,
                    const std::vector<std::int32_t>& t, const std::vector<float>& g, const std::vector<float>& dh0,
                    const std::vector<float>& dw0, const emu::Options& options) {
  Outputs o{ot_test::nan_floats(s.n), ot_test::nan_floats(s.n), dh0, dw0};
  if (s.n == 0) return o;  // the launchers launch nothing
  const k::UnembedArgs a{h.data(), w.data(), t.data(), s.n, s.d, s.vocab};
  auto ws = ot_test::nan_floats(k::unembed_workspace_bytes(s.n, s.vocab) / sizeof(float));
  const ot_cuda::Dim3 block{static_cast<unsigned>(k::unembed_block_threads())};
  emu::launch(k::unembed_partials_grid(s.n, s.vocab), block, k::unembed_forward_shared_bytes(), options,
              [&](auto& ctx) { k::unembed_partials_f32(ctx, a, o.lp.data(), ws.data()); });
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(s.n)},
              ot_cuda::Dim3{static_cast<unsigned>(k::unembed_combine_threads(s.vocab))},
              k::unembed_combine_shared_bytes(s.vocab), options,
              [&](auto& ctx) { k::unembed_combine_f32(ctx, ws.data(), o.lp.data(), o.lse.data(), s.n, s.vocab); });
  emu::launch(k::unembed_backward_hidden_grid(s.n, s.d), block, k::unembed_backward_shared_bytes(), options,
              [&](auto& ctx) { k::unembed_backward_hidden_f32(ctx, a, o.lse.data(), g.data(), o.dh.data()); });
  emu::launch(k::unembed_backward_weight_grid(s.vocab, s.d), block, k::unembed_backward_shared_bytes(), options,
              [&](auto& ctx) { k::unembed_backward_weight_f32(ctx, a, o.lse.data(), g.data(), o.dw.data()); });
  return o;
}

void run(const Shape& s, const emu::Mode& mode) {
  const std::string what = "unembed n " + std::to_string(s.n) + ", d " + std::to_string(s.d) + ", vocab " +
                           std::to_string(s.vocab) + " in mode " + mode.name;
  const std::size_t nd = static_cast<std::size_t>(s.n) * s.d, vd = static_cast<std::size_t>(s.vocab) * s.d;
  const std::uint64_t seed = 90 + nd + 7 * vd;
  const auto h = ot_test::random_floats(nd, -1.0f, 1.0f, seed);
  const auto w = ot_test::random_floats(vd, -0.25f, 0.25f, seed + 1);
  const auto g = ot_test::random_floats(static_cast<std::size_t>(s.n), -2.0f, 2.0f, seed + 2);
  const auto dh0 = ot_test::random_floats(nd, -0.5f, 0.5f, seed + 3);  // the backward adds to these
  const auto dw0 = ot_test::random_floats(vd, -0.5f, 0.5f, seed + 4);
  std::vector<std::int32_t> t(static_cast<std::size_t>(s.n));
  for (int i = 0; i < s.n; ++i) t[i] = (i * 37 + 11) % s.vocab;
  if (s.n > 0) t[s.n - 1] = s.vocab - 1;  // the last tile's last column

  const Outputs o = run_kernels(s, h, w, t, g, dh0, dw0, mode.options);

  // The CPU backend (tiles of its own), and a float64 reference.
  std::vector<float> cpu_lp(s.n), cpu_lse(s.n), cpu_dh = dh0, cpu_dw = dw0;
  const ot::UnembedShape us{s.n, s.d, s.vocab, 16, 256};
  ot::unembed_logprobs(us, h.data(), w.data(), t.data(), cpu_lp.data(), cpu_lse.data());
  ot::unembed_logprobs_backward(us, h.data(), w.data(), t.data(), cpu_lse.data(), g.data(), cpu_dh.data(),
                                cpu_dw.data());

  std::vector<double> ref_dh(dh0.begin(), dh0.end()), mag_dh(nd), ref_dw(dw0.begin(), dw0.end()), mag_dw(vd);
  for (std::size_t e = 0; e < nd; ++e) mag_dh[e] = std::abs(ref_dh[e]);
  for (std::size_t e = 0; e < vd; ++e) mag_dw[e] = std::abs(ref_dw[e]);
  ot_test::Worst w_lse, w_lp, c_lse, c_lp, w_dh, c_dh, w_dw, c_dw;
  std::vector<double> logit(s.vocab), mag(s.vocab);
  for (int i = 0; i < s.n; ++i) {
    const float* hi = h.data() + static_cast<std::size_t>(i) * s.d;
    double m = -INFINITY, big = 0, sum = 0;
    for (int j = 0; j < s.vocab; ++j) {
      const float* wj = w.data() + static_cast<std::size_t>(j) * s.d;
      logit[j] = mag[j] = 0;
      for (int c = 0; c < s.d; ++c) {
        logit[j] += double(hi[c]) * wj[c];
        mag[j] += std::abs(double(hi[c]) * wj[c]);
      }
      m = std::max(m, logit[j]);
      big = std::max(big, mag[j]);
    }
    for (int j = 0; j < s.vocab; ++j) sum += std::exp(logit[j] - m);
    const double lse = m + std::log(sum), lp = logit[t[i]] - lse;
    const double lp_mag = mag[t[i]] + big + std::abs(lse);
    w_lse.add(o.lse[i], lse, big, i);
    c_lse.add(o.lse[i], cpu_lse[i], big, i);
    w_lp.add(o.lp[i], lp, lp_mag, i);
    c_lp.add(o.lp[i], cpu_lp[i], lp_mag, i);
    for (int j = 0; j < s.vocab; ++j) {
      const double p = std::exp(logit[j] - lse), onehot = j == t[i] ? 1.0 : 0.0;
      const double gij = double(g[i]) * (onehot - p), gmag = std::abs(double(g[i])) * (onehot + p);
      const float* wj = w.data() + static_cast<std::size_t>(j) * s.d;
      for (int c = 0; c < s.d; ++c) {
        const std::size_t eh = static_cast<std::size_t>(i) * s.d + c, ew = static_cast<std::size_t>(j) * s.d + c;
        ref_dh[eh] += gij * wj[c];
        mag_dh[eh] += gmag * std::abs(double(wj[c]));
        ref_dw[ew] += gij * hi[c];
        mag_dw[ew] += gmag * std::abs(double(hi[c]));
      }
    }
  }
  for (std::size_t e = 0; e < nd; ++e) {
    w_dh.add(o.dh[e], ref_dh[e], mag_dh[e], e);
    c_dh.add(o.dh[e], cpu_dh[e], mag_dh[e], e);
  }
  for (std::size_t e = 0; e < vd; ++e) {
    w_dw.add(o.dw[e], ref_dw[e], mag_dw[e], e);
    c_dw.add(o.dw[e], cpu_dw[e], mag_dw[e], e);
  }
  EXPECT_WITHIN(w_lse, 1e-5, what + ": lse vs float64");
  EXPECT_WITHIN(w_lp, 1e-5, what + ": logprobs vs float64");
  EXPECT_WITHIN(c_lse, 1e-5, what + ": lse vs the CPU backend");
  EXPECT_WITHIN(c_lp, 1e-5, what + ": logprobs vs the CPU backend");
  EXPECT_WITHIN(w_dh, 1e-5, what + ": dHidden vs float64");
  EXPECT_WITHIN(c_dh, 1e-5, what + ": dHidden vs the CPU backend");
  EXPECT_WITHIN(w_dw, 1e-5, what + ": dW vs float64");
  EXPECT_WITHIN(c_dw, 1e-5, what + ": dW vs the CPU backend");
}

}  // namespace

TEST(unembed_matches_reference_and_cpu_backend_in_every_mode) {
  // Edge shapes (one row, a vocabulary of one, sizes off the 64 / 16 tiles,
  // more rows than a tile) in every mode; d 256 and a vocabulary of 520 in
  // the plain mode only (the checking modes log every shared access).
  const std::vector<Shape> shapes{{1, 8, 1}, {3, 8, 7}, {1, 33, 65}, {5, 16, 130}, {66, 17, 70}, {0, 8, 5}};
  const auto modes = ot_test::op_modes();
  for (const auto& mode : modes) {
    for (const auto& s : shapes) run(s, mode);
  }
  run({20, 256, 520}, modes[0]);
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    run({64, 256, 3000}, modes[0]);
    run({130, 96, 2900}, modes.back());
  }
}

TEST(unembed_is_deterministic) {
  // Same inputs, another thread order and two workers: bit-identical outputs.
  const Shape s{9, 40, 200};
  const auto h = ot_test::random_floats(360, -1.0f, 1.0f, 5), w = ot_test::random_floats(8000, -0.25f, 0.25f, 6);
  const auto g = ot_test::random_floats(9, -1.0f, 1.0f, 7);
  std::vector<std::int32_t> t{0, 5, 199, 64, 63, 128, 1, 2, 100};
  const std::vector<float> dh0(360, 0.0f), dw0(8000, 0.0f);
  const auto modes = ot_test::op_modes();
  const Outputs a = run_kernels(s, h, w, t, g, dh0, dw0, modes[0].options);
  const Outputs b = run_kernels(s, h, w, t, g, dh0, dw0, modes.back().options);
  CHECK(a.lp == b.lp);
  CHECK(a.lse == b.lse);
  CHECK(a.dh == b.dh);
  CHECK(a.dw == b.dw);
}

TEST(unembed_launchers_validate_and_match_their_bodies) {
  const Shape s{70, 24, 150};
  const auto h = ot_test::random_floats(70 * 24, -1.0f, 1.0f, 15),
             w = ot_test::random_floats(150 * 24, -0.25f, 0.25f, 16);
  const auto g = ot_test::random_floats(70, -1.0f, 1.0f, 17);
  const auto dh0 = ot_test::random_floats(70 * 24, -0.5f, 0.5f, 18),
             dw0 = ot_test::random_floats(150 * 24, -0.5f, 0.5f, 19);
  std::vector<std::int32_t> t(70);
  for (int i = 0; i < 70; ++i) t[i] = (i * 53 + 3) % 150;
  const Outputs by_hand = run_kernels(s, h, w, t, g, dh0, dw0, {});

  Outputs launched{ot_test::nan_floats(70), ot_test::nan_floats(70), dh0, dw0};
  auto ws = ot_test::nan_floats(k::unembed_workspace_bytes(70, 150) / sizeof(float));
  CHECK_EQ(ot_cuda_unembed_logprobs_f32(h.data(), w.data(), t.data(), launched.lp.data(), launched.lse.data(), 70, 24,
                                        150, ws.data(), nullptr),
           cudaSuccess);
  CHECK_EQ(ot_cuda_unembed_logprobs_backward_f32(h.data(), w.data(), t.data(), launched.lse.data(), g.data(),
                                                 launched.dh.data(), launched.dw.data(), 70, 24, 150, nullptr),
           cudaSuccess);
  CHECK(launched.lp == by_hand.lp);
  CHECK(launched.lse == by_hand.lse);
  CHECK(launched.dh == by_hand.dh);
  CHECK(launched.dw == by_hand.dw);
  // Without d_w only dHidden changes.
  auto dh = dh0, dw = dw0;
  CHECK_EQ(ot_cuda_unembed_logprobs_backward_f32(h.data(), w.data(), t.data(), launched.lse.data(), g.data(), dh.data(),
                                                 nullptr, 70, 24, 150, nullptr),
           cudaSuccess);
  CHECK(dh == by_hand.dh);
  CHECK(dw == dw0);

  float lp = 0, lse = 0;
  CHECK_EQ(ot_cuda_unembed_logprobs_f32(h.data(), w.data(), t.data(), &lp, &lse, 0, 24, 150, nullptr, nullptr),
           cudaSuccess);
  CHECK_EQ(ot_cuda_unembed_logprobs_f32(h.data(), w.data(), t.data(), &lp, &lse, 1, 0, 150, ws.data(), nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_unembed_logprobs_f32(h.data(), w.data(), t.data(), &lp, &lse, 1, 24, 0, ws.data(), nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_unembed_logprobs_f32(h.data(), w.data(), t.data(), &lp, &lse, 1, 24, 150, nullptr, nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_unembed_logprobs_backward_f32(h.data(), w.data(), t.data(), &lse, &lp, dh.data(), nullptr, -1, 24,
                                                 150, nullptr),
           cudaErrorInvalidValue);
}

TEST(unembed_launch_shape) {
  CHECK_EQ(k::unembed_tiles(1), 1);
  CHECK_EQ(k::unembed_tiles(64), 1);
  CHECK_EQ(k::unembed_tiles(65), 2);
  CHECK_EQ(k::unembed_workspace_bytes(3, 130), std::size_t{2 * 3 * 3 * 4});
  CHECK_EQ(k::unembed_partials_grid(65, 130).x, 3u);
  CHECK_EQ(k::unembed_partials_grid(65, 130).y, 2u);
  CHECK_EQ(k::unembed_backward_hidden_grid(65, 200).x, 4u);
  CHECK_EQ(k::unembed_backward_weight_grid(130, 8).y, 3u);
  // The backward's tiles fit the 48 KiB a launch gets without opting in.
  CHECK(k::unembed_backward_shared_bytes() <= 48 * 1024);
}
