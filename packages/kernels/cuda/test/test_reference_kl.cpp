// kernels/reference_kl.cuh through its launcher (kernels/reference_kl.cu on the
// emulated device, so the launch shape is the one a GPU gets), in every
// checking mode, against the CPU backend's referenceKlRows
// (../src/backend/cpu-loops.ts) written out here in float64 from the same f32
// inputs: out ≤ 1e-9 relative to Σ_j |q_j (log q_j − log p_j)| (its terms may
// cancel), d_logits ≤ 1e-6 absolute; zero-weight rows leave d_logits alone and
// get out = 0 (out starts as NaN).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../include/ot_cuda/launch.h"
#include "../kernels/launchers.h"
#include "../kernels/reference_kl.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

// Runs fn with the emulated device's options set to `options`, then restores them.
void on_device(const emu::Options& options, const std::function<void()>& fn) {
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

// The f32 log-sum-exp of each row, as the forward (logSoftmaxGather) hands it over.
std::vector<float> row_lse(const std::vector<float>& x, int rows, int vocab) {
  std::vector<float> lse(rows);
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < vocab; ++j) m = std::max(m, double(x[std::size_t(r) * vocab + j]));
    for (int j = 0; j < vocab; ++j) s += std::exp(x[std::size_t(r) * vocab + j] - m);
    lse[r] = static_cast<float>(m + std::log(s));
  }
  return lse;
}

// Weights cycle through 1, 0, −0.5, 2.5, 0.25 (row 1, 6, … are skipped).
float weight_of(int r) {
  constexpr float kWeights[] = {1.0f, 0.0f, -0.5f, 2.5f, 0.25f};
  return kWeights[r % 5];
}

void run(int rows, int vocab, float spread, const emu::Mode& mode) {
  const std::string what = "reference_kl " + std::to_string(rows) + "x" + std::to_string(vocab) + " spread " +
                           std::to_string(spread) + " in mode " + mode.name;
  const std::size_t size = static_cast<std::size_t>(rows) * vocab;
  const auto logits = ot_test::random_floats(size, -5.0f, 5.0f, 60 + size);
  auto ref_logits = ot_test::random_floats(size, -spread, spread, 61 + size);
  for (std::size_t i = 0; i < size; ++i) ref_logits[i] += logits[i];  // the reference near the policy
  const auto lse = row_lse(logits, rows, vocab), ref_lse = row_lse(ref_logits, rows, vocab);
  std::vector<float> weights(rows);
  for (int r = 0; r < rows; ++r) weights[r] = weight_of(r);
  const auto d0 = ot_test::random_floats(size, -0.1f, 0.1f, 62 + size);

  auto d_logits = d0;
  std::vector<double> out(rows, std::numeric_limits<double>::quiet_NaN());
  on_device(mode.options, [&] {
    const cudaError_t e = ot_cuda_reference_kl_f32(logits.data(), lse.data(), ref_logits.data(), ref_lse.data(),
                                                   weights.data(), rows, vocab, d_logits.data(), out.data(), nullptr);
    if (e != cudaSuccess) ot_test::fail(__FILE__, __LINE__, what + ": launcher returned " + std::to_string(int(e)));
  });

  ot_test::Worst w_out;
  double worst_d = 0;
  std::size_t worst_at = 0;
  for (int r = 0; r < rows; ++r) {
    const double w = weights[r];
    double kl = 0, mag = 0;
    for (std::size_t j = std::size_t(r) * vocab; j < std::size_t(r + 1) * vocab; ++j) {
      const double logp = double(logits[j]) - lse[r], logq = double(ref_logits[j]) - ref_lse[r];
      const double q = std::exp(logq), term = q * (logq - logp);
      kl += term, mag += std::abs(term);
      const double want = w == 0 ? d0[j] : static_cast<float>(double(d0[j]) + w * (std::exp(logp) - q));
      const double err = std::abs(double(d_logits[j]) - want);
      if (!(err <= worst_d)) worst_d = std::isnan(err) ? INFINITY : err, worst_at = j;
      if (w == 0 && !(d_logits[j] == d0[j])) worst_d = INFINITY, worst_at = j;  // untouched, bit for bit
    }
    w_out.add(out[r], w * kl, std::abs(w) * mag, r);
    if (w == 0 && !(out[r] == 0.0)) w_out.add(INFINITY, 0, 0, r);
  }
  EXPECT_WITHIN(w_out, 1e-9, what + " out vs float64");
  if (!(worst_d <= 1e-6)) {
    ot_test::fail(
        __FILE__, __LINE__,
        what + " d_logits: absolute error " + std::to_string(worst_d) + " at element " + std::to_string(worst_at));
  }
}

}  // namespace

TEST(reference_kl_matches_reference_in_every_mode) {
  struct Shape {
    int rows, vocab;
  };
  std::vector<Shape> shapes{{1, 1}, {1, 7}, {5, 33}, {6, 130}, {3, 1000}, {4, 4099}};
  if (const char* large = std::getenv("OT_CUDA_EMU_LARGE"); large != nullptr && large[0] == '1') {
    shapes.push_back({8, 32000});
  }
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& s : shapes) run(s.rows, s.vocab, 1.0f, mode);
    run(5, 300, 1e-3f, mode);  // q ≈ p: KL ~ 1e-7 of terms ~ 1e-3, the cancelling case
    run(5, 300, 8.0f, mode);   // far apart
  }
}

TEST(reference_kl_validates_and_skips_empty_work) {
  std::vector<float> f(4, 0.0f);
  std::vector<double> out(1, 7.0);
  const float* c = f.data();
  CHECK_EQ(ot_cuda_reference_kl_f32(c, c, c, c, c, -1, 4, f.data(), out.data(), nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_reference_kl_f32(c, c, c, c, c, 1, 0, f.data(), out.data(), nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_reference_kl_f32(c, c, c, c, c, 0, 4, f.data(), out.data(), nullptr), cudaSuccess);
  CHECK_EQ(out[0], 7.0);
}

TEST(reference_kl_block_shape) {
  // Whole warps, ≥ 4 columns a thread, at most 8 warps; one double per warp.
  CHECK_EQ(k::reference_kl_block_threads(1), 32);
  CHECK_EQ(k::reference_kl_block_threads(129), 64);
  CHECK_EQ(k::reference_kl_block_threads(152064), 256);
  CHECK_EQ(k::reference_kl_shared_bytes(256), std::size_t{64});
}
