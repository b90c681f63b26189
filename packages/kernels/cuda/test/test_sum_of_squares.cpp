// kernels/sum_of_squares.cuh in the CPU execution, in every checking mode,
// against a float64 reference and the CPU kernel (../../src/cpu/optim.cc).
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/optim.h"
#include "../kernels/sum_of_squares.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

void run(std::int64_t count, unsigned blocks, const emu::Mode& mode) {
  const std::string what =
      "sum_of_squares count " + std::to_string(count) + " blocks " + std::to_string(blocks) + " in mode " + mode.name;
  const auto x = ot_test::random_floats(static_cast<std::size_t>(count), -3.0f, 3.0f, 20 + count);
  double out = 0.0;
  emu::launch(ot_cuda::Dim3{blocks}, ot_cuda::Dim3{k::kElementwiseThreads},
              k::sum_of_squares_shared_bytes(k::kElementwiseThreads), mode.options,
              [&](auto& ctx) { k::sum_of_squares_f32(ctx, x.data(), count, &out); });
  double ref = 0.0;
  for (float v : x) ref += double(v) * double(v);
  ot_test::Worst w, c;
  w.add(out, ref, ref, 0);
  c.add(out, ot::sum_of_squares(x.data(), count), ref, 0);
  // Both accumulate in float64: only the order of the additions differs.
  EXPECT_WITHIN(w, 1e-12, what + " vs float64");
  EXPECT_WITHIN(c, 1e-12, what + " vs CPU kernel");
}

}  // namespace

TEST(sum_of_squares_matches_reference_in_every_mode) {
  for (const auto& mode : ot_test::op_modes()) {
    for (std::int64_t count : {1, 7, 255, 256, 1000, 5003}) run(count, k::sum_of_squares_blocks(count), mode);
    run(4099, 3, mode);  // the grid-stride loop, three atomics
  }
}

TEST(sum_of_squares_grid) {
  CHECK_EQ(k::sum_of_squares_blocks(0), 1u);
  CHECK_EQ(k::sum_of_squares_blocks(257), 2u);
  CHECK_EQ(k::sum_of_squares_blocks(std::int64_t{1} << 40), 1024u);
  CHECK_EQ(k::sum_of_squares_shared_bytes(256), std::size_t{64});
}
