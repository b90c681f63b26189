// kernels/embedding.cuh in the CPU execution, in every checking mode, against a
// float64 reference and the CPU kernel (../../src/cpu/embedding.cc); the
// backward with ids repeated within the batch.
#include <cmath>
#include <string>
#include <vector>

#include "../../src/cpu/elementwise.h"
#include "../kernels/embedding.cuh"
#include "bf16.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

void run(int n, int d, int vocab, bool all_same, const emu::Mode& mode) {
  const std::string what = "embedding n " + std::to_string(n) + " d " + std::to_string(d) + " vocab " +
                           std::to_string(vocab) + (all_same ? " (one id)" : "") + " in mode " + mode.name;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[i] = all_same ? vocab - 1 : (i * 7 + 3) % vocab;  // n > vocab repeats ids
  const std::size_t table_size = static_cast<std::size_t>(vocab) * d, out_size = static_cast<std::size_t>(n) * d;
  const auto table = ot_test::random_floats(table_size, -1.0f, 1.0f, 40 + table_size);
  const auto dy = ot_test::random_floats(out_size, -1.0f, 1.0f, 41 + out_size);
  const auto dt0 = ot_test::random_floats(table_size, -0.5f, 0.5f, 42 + table_size);
  auto out = ot_test::nan_floats(out_size);
  auto dt = dt0;
  const auto threads = static_cast<unsigned>(k::embedding_block_threads(d));
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(n)}, ot_cuda::Dim3{threads}, 0, mode.options,
              [&](auto& ctx) { k::embedding_forward_f32(ctx, ids.data(), table.data(), out.data(), d); });
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(n)}, ot_cuda::Dim3{threads}, 0, mode.options,
              [&](auto& ctx) { k::embedding_backward_f32(ctx, ids.data(), dy.data(), dt.data(), d); });

  int forward_wrong = 0;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < d; ++c) forward_wrong += !(out[std::size_t(i) * d + c] == table[std::size_t(ids[i]) * d + c]);
  }
  if (forward_wrong != 0) ot_test::fail(__FILE__, __LINE__, what + ": forward rows are not the table's rows");

  // A bf16 table: each row widened exactly.
  std::vector<std::uint16_t> table_b(table_size);
  for (std::size_t j = 0; j < table_size; ++j) table_b[j] = ot_test::to_bf16(table[j]);
  auto out_b = ot_test::nan_floats(out_size);
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(n)}, ot_cuda::Dim3{threads}, 0, mode.options,
              [&](auto& ctx) { k::embedding_forward_bf16(ctx, ids.data(), table_b.data(), out_b.data(), d); });
  int bf16_wrong = 0;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < d; ++c) {
      const double want = ot_test::from_bf16(table_b[std::size_t(ids[i]) * d + c]);
      bf16_wrong += !(out_b[std::size_t(i) * d + c] == want);
    }
  }
  if (bf16_wrong != 0) ot_test::fail(__FILE__, __LINE__, what + ": bf16 forward rows are not the table's rows widened");

  std::vector<double> ref(dt0.begin(), dt0.end()), mag(table_size);
  for (std::size_t j = 0; j < table_size; ++j) mag[j] = std::abs(ref[j]);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < d; ++c) {
      ref[std::size_t(ids[i]) * d + c] += dy[std::size_t(i) * d + c];
      mag[std::size_t(ids[i]) * d + c] += std::abs(dy[std::size_t(i) * d + c]);
    }
  }
  auto cpu_out = ot_test::nan_floats(out_size);
  auto cpu_dt = dt0;
  ot::embedding_forward(n, d, ids.data(), table.data(), cpu_out.data());
  ot::embedding_backward(n, d, ids.data(), dy.data(), cpu_dt.data());
  ot_test::Worst w, c, f;
  for (std::size_t j = 0; j < table_size; ++j) {
    w.add(dt[j], ref[j], mag[j], j);
    c.add(dt[j], cpu_dt[j], mag[j], j);
  }
  for (std::size_t j = 0; j < out_size; ++j) f.add(out[j], cpu_out[j], cpu_out[j], j);
  EXPECT_WITHIN(w, 1e-5, what + " d_table vs float64");
  EXPECT_WITHIN(c, 1e-5, what + " d_table vs CPU kernel");
  EXPECT_WITHIN(f, 0.0, what + " forward vs CPU kernel");
}

}  // namespace

TEST(embedding_matches_reference_in_every_mode) {
  for (const auto& mode : ot_test::op_modes()) {
    for (int d : {1, 7, 33, 300}) {
      run(1, d, 3, false, mode);
      run(5, d, 11, false, mode);
      run(40, d, 11, false, mode);  // every id 3-4 times
      run(17, d, 5, true, mode);    // one id 17 times: 17 atomics per element
    }
  }
}
