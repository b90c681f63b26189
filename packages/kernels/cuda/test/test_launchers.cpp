// The launchers of kernels/*.cu on the emulated device (include/ot_cuda/launch.h
// with OT_CUDA_EMU): each validates, shapes and launches exactly as on a GPU,
// and gives the bits its kernel body gives when launched by hand.
#include <cstdint>
#include <limits>
#include <vector>

#include "../include/ot_cuda/launch.h"
#include "../kernels/gemm_bf16.cuh"
#include "../kernels/launchers.h"
#include "../kernels/rmsnorm.cuh"
#include "bf16.h"
#include "check.h"
#include "op_check.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs fn with the emulated device's options set to `options`, then restores them.
template <class F>
void with_device_options(const ot_cuda::emu::Options& options, F fn) {
  const ot_cuda::emu::Options saved = ot_cuda::emu::device_options();
  ot_cuda::emu::device_options() = options;
  try {
    fn();
  } catch (...) {
    ot_cuda::emu::device_options() = saved;
    throw;
  }
  ot_cuda::emu::device_options() = saved;
}

}  // namespace

TEST(launchers_rmsnorm_matches_its_body_and_validates) {
  const int rows = 5, cols = 130;
  const auto x = ot_test::random_floats(std::size_t{rows} * cols, -2, 2, 7);
  const auto w = ot_test::random_floats(cols, 0.5f, 1.5f, 8);
  std::vector<float> by_hand(x.size(), kNaN), launched(x.size(), kNaN);
  const int threads = ot_cuda::kernels::rmsnorm_block_threads(cols);
  ot_cuda::emu::launch(ot_cuda::Dim3{rows}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
                       ot_cuda::kernels::rmsnorm_shared_bytes(threads), {}, [&](auto& ctx) {
                         ot_cuda::kernels::rmsnorm_f32(ctx, x.data(), w.data(), by_hand.data(), nullptr, cols, 1e-6f);
                       });
  for (const auto& mode : ot_test::op_modes()) {
    std::fill(launched.begin(), launched.end(), kNaN);
    with_device_options(mode.options, [&] {
      CHECK_EQ(ot_cuda_rmsnorm_f32(x.data(), w.data(), launched.data(), nullptr, rows, cols, 1e-6f, nullptr), cudaSuccess);
    });
    CHECK(launched == by_hand);
  }
  CHECK_EQ(ot_cuda_rmsnorm_f32(x.data(), w.data(), launched.data(), nullptr, -1, cols, 1e-6f, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_rmsnorm_f32(x.data(), w.data(), launched.data(), nullptr, rows, 0, 1e-6f, nullptr), cudaErrorInvalidValue);
  std::vector<float> untouched(1, kNaN);
  CHECK_EQ(ot_cuda_rmsnorm_f32(x.data(), w.data(), untouched.data(), nullptr, 0, cols, 1e-6f, nullptr), cudaSuccess);
  CHECK(std::isnan(untouched[0]));
}

TEST(launchers_gemm_bf16_2d_grid_matches_its_body) {
  const int m = 37, n = 70, k = 48;
  std::vector<std::uint16_t> x(std::size_t{m} * k), w(std::size_t{n} * k);
  const auto xf = ot_test::random_floats(x.size(), -1, 1, 3), wf = ot_test::random_floats(w.size(), -1, 1, 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = ot_test::to_bf16(xf[i]);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = ot_test::to_bf16(wf[i]);
  std::vector<float> by_hand(std::size_t{m} * n, kNaN), launched(by_hand.size(), kNaN);
  ot_cuda::emu::launch(ot_cuda::kernels::gemm_bf16_grid(m, n),
                       ot_cuda::Dim3{static_cast<unsigned>(ot_cuda::kernels::gemm_bf16_block_threads())},
                       ot_cuda::kernels::gemm_bf16_shared_bytes(), {}, [&](auto& ctx) {
                         ot_cuda::kernels::gemm_bf16_xwt(ctx, x.data(), w.data(), by_hand.data(), m, n, k);
                       });
  CHECK_EQ(ot_cuda_gemm_bf16_xwt(x.data(), w.data(), launched.data(), m, n, k, nullptr), cudaSuccess);
  CHECK(launched == by_hand);
}

// sum_of_squares zeroes its output with cudaMemsetAsync before accumulating.
TEST(launchers_sum_of_squares_runs_its_memset_first) {
  const std::vector<float> x{1, 2, 3, -4};
  double out = 99;
  CHECK_EQ(ot_cuda_sum_of_squares_f32(x.data(), 4, &out, nullptr), cudaSuccess);
  CHECK_EQ(out, 30.0);
  CHECK_EQ(ot_cuda_sum_of_squares_f32(x.data(), 0, &out, nullptr), cudaSuccess);
  CHECK_EQ(out, 0.0);
}

// A block over a kernel's __launch_bounds__ fails to launch on a GPU; the
// emulated device refuses it too, naming the kernel.
TEST(launchers_launch_bounds_are_enforced) {
  ot_cuda::emu::check_launch_bounds("k", 256, ot_cuda::Dim3{256});
  CHECK_THROWS(ot_cuda::emu::check_launch_bounds("ot_k", 256, ot_cuda::Dim3{32, 9}), "ot_k: a block of 288 threads");
}

// A device gives a launch 48 KiB of dynamic shared memory unless the kernel
// opted in to more (no launcher does): the CPU execution refuses more too.
TEST(launchers_dynamic_shared_memory_is_capped_at_48_kib) {
  const auto noop = [](auto&) {};
  ot_cuda::emu::launch(ot_cuda::Dim3{1}, ot_cuda::Dim3{32}, 48 * 1024, {}, noop);
  CHECK_THROWS(ot_cuda::emu::launch(ot_cuda::Dim3{1}, ot_cuda::Dim3{32}, 48 * 1024 + 1, {}, noop),
               "exceed the 48 KiB a launch gets without opting in");
}
