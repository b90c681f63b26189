// kernels/rows.cuh through its launchers (kernels/rows.cu on the emulated
// device, so the launch shapes are the ones a GPU gets), in every checking
// mode, against the CPU backend's semantics (../../src/cpu/add.cc, ../src/
// backend/cpu.ts and cpu-loops.ts) written out here: the copies, fills, adds
// and scale are exact (bit for bit), sum_rows ≤ 1e-5 of the magnitude of its
// terms. Spans run at aligned and unaligned offsets (the 16-byte pack path and
// the scalar one), with a guard element either side that must stay untouched;
// the bodies are also run by hand on grids smaller than the work (grid-stride).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../include/ot_cuda/launch.h"
#include "../kernels/launchers.h"
#include "../kernels/rows.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool large() {
  const char* v = std::getenv("OT_CUDA_EMU_LARGE");
  return v != nullptr && v[0] == '1';
}

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

// got == want bit for bit (a NaN left in got never matches); names the first difference.
template <class T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what, int line) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(got[i] == want[i])) {
      ot_test::fail(__FILE__, line,
                    what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
                        std::to_string(want[i]));
      return;
    }
  }
}
#define EXPECT_SAME(got, want, what) expect_same((got), (want), (what), __LINE__)

void expect_ok(cudaError_t e, const std::string& what, int line) {
  if (e != cudaSuccess) ot_test::fail(__FILE__, line, what + ": launcher returned " + std::to_string(int(e)));
}
#define EXPECT_OK(call, what) expect_ok((call), (what), __LINE__)

std::vector<double> random_doubles(std::size_t n, std::uint64_t seed) {
  const auto f = ot_test::random_floats(n, -3.0f, 3.0f, seed);
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = f[i] / 7.0;  // not floats
  return d;
}

// add_in_place, scale and the three fills over `count` elements from element
// `offset` of buffers with one guard element either side.
void run_elementwise(std::int64_t count, int offset, const emu::Mode& mode) {
  const std::string what =
      "count " + std::to_string(count) + " offset " + std::to_string(offset) + " in mode " + mode.name;
  const auto n = static_cast<std::size_t>(count), len = n + offset + 1;
  const auto t0 = ot_test::random_floats(len, -2.0f, 2.0f, 10 + n),
             s = ot_test::random_floats(len, -2.0f, 2.0f, 11 + n);
  const double factor = 0.123456789012345;  // not a float: the product is f64, rounded once

  auto t = t0, want = t0;
  for (std::size_t i = offset; i < offset + n; ++i) want[i] = t0[i] + s[i];
  on_device(mode.options, [&] {
    EXPECT_OK(ot_cuda_add_in_place_f32(t.data() + offset, s.data() + offset, count, nullptr), "add_in_place " + what);
  });
  EXPECT_SAME(t, want, "add_in_place " + what);

  t = t0, want = t0;
  for (std::size_t i = offset; i < offset + n; ++i) want[i] = static_cast<float>(static_cast<double>(t0[i]) * factor);
  on_device(mode.options,
            [&] { EXPECT_OK(ot_cuda_scale_f32(t.data() + offset, count, factor, nullptr), "scale " + what); });
  EXPECT_SAME(t, want, "scale " + what);

  t = t0, want = t0;
  for (std::size_t i = offset; i < offset + n; ++i) want[i] = -1.5f;
  on_device(mode.options,
            [&] { EXPECT_OK(ot_cuda_fill_f32(t.data() + offset, count, -1.5f, nullptr), "fill_f32 " + what); });
  EXPECT_SAME(t, want, "fill_f32 " + what);

  std::vector<std::int32_t> ti(len, 0x7fffffff), want_i = ti;
  for (std::size_t i = offset; i < offset + n; ++i) want_i[i] = -7;
  on_device(mode.options,
            [&] { EXPECT_OK(ot_cuda_fill_i32(ti.data() + offset, count, -7, nullptr), "fill_i32 " + what); });
  EXPECT_SAME(ti, want_i, "fill_i32 " + what);

  auto td = random_doubles(len, 12 + n), want_d = td;
  for (std::size_t i = offset; i < offset + n; ++i) want_d[i] = 1e300 / 3;
  on_device(mode.options,
            [&] { EXPECT_OK(ot_cuda_fill_f64(td.data() + offset, count, 1e300 / 3, nullptr), "fill_f64 " + what); });
  EXPECT_SAME(td, want_d, "fill_f64 " + what);
}

// add_bias, gather_rows, scatter_rows: rows of d from element `offset`.
void run_rows(int rows, int d, int offset, const emu::Mode& mode) {
  const std::string what =
      std::to_string(rows) + "x" + std::to_string(d) + " offset " + std::to_string(offset) + " in mode " + mode.name;
  const std::size_t size = static_cast<std::size_t>(rows) * d, len = size + offset + 1;

  const auto y0 = ot_test::random_floats(len, -2.0f, 2.0f, 20 + size),
             bias = ot_test::random_floats(d + offset, -1.0f, 1.0f, 21 + d);
  auto y = y0, want = y0;
  for (std::size_t r = 0; r < std::size_t(rows); ++r) {
    for (int c = 0; c < d; ++c) want[offset + r * d + c] = y0[offset + r * d + c] + bias[offset + c];
  }
  on_device(mode.options, [&] {
    EXPECT_OK(ot_cuda_add_bias_f32(y.data() + offset, bias.data() + offset, rows, d, nullptr), "add_bias " + what);
  });
  EXPECT_SAME(y, want, "add_bias " + what);

  // gather: n = rows picks from a source of 5 rows, repeating some.
  const int source_rows = 5;
  const auto source = ot_test::random_floats(std::size_t(source_rows) * d + offset, -2.0f, 2.0f, 22 + d);
  std::vector<std::int32_t> idx(rows);
  for (int i = 0; i < rows; ++i) idx[i] = (i * 3 + 4) % source_rows;
  auto out = ot_test::nan_floats(len);
  auto want_out = out;
  for (int i = 0; i < rows; ++i) {
    for (int c = 0; c < d; ++c)
      want_out[offset + std::size_t(i) * d + c] = source[offset + std::size_t(idx[i]) * d + c];
  }
  on_device(mode.options, [&] {
    EXPECT_OK(ot_cuda_gather_rows_f32(source.data() + offset, idx.data(), rows, d, out.data() + offset, nullptr),
              "gather_rows " + what);
  });
  // NaN guards: compare the span, then check the guards kept their NaN.
  EXPECT_SAME(std::vector<float>(out.begin() + offset, out.end() - 1),
              std::vector<float>(want_out.begin() + offset, want_out.end() - 1), "gather_rows " + what);
  CHECK(std::isnan(out.back()) && (offset == 0 || std::isnan(out.front())));

  // scatter: rows distinct target rows of a target of rows + 3, in a shuffled order.
  const int target_rows = rows + 3;
  std::vector<std::int32_t> to(target_rows);
  for (int i = 0; i < target_rows; ++i) to[i] = i;
  std::shuffle(to.begin(), to.end(), std::mt19937_64(25 + rows));
  to.resize(rows);
  const auto t0 = ot_test::random_floats(std::size_t(target_rows) * d + offset + 1, -2.0f, 2.0f, 23 + d);
  const auto src = ot_test::random_floats(size + offset, -2.0f, 2.0f, 24 + d);
  auto t = t0, want_t = t0;
  for (int i = 0; i < rows; ++i) {
    for (int c = 0; c < d; ++c) want_t[offset + std::size_t(to[i]) * d + c] = src[offset + std::size_t(i) * d + c];
  }
  on_device(mode.options, [&] {
    EXPECT_OK(ot_cuda_scatter_rows_f32(t.data() + offset, to.data(), rows, d, src.data() + offset, nullptr),
              "scatter_rows " + what);
  });
  EXPECT_SAME(t, want_t, "scatter_rows " + what);
}

struct Copy {
  std::int32_t from, to, tokens;
};

// copyKvBlocks for one layer, as cpu-loops.ts (copyWithin, copy after copy).
void copy_kv_reference(std::vector<float>& cache, int block_size, int row, const std::vector<Copy>& copies) {
  for (const auto& c : copies) {
    const std::size_t from = std::size_t(c.from) * block_size * row, to = std::size_t(c.to) * block_size * row;
    const std::vector<float> span(cache.begin() + from, cache.begin() + from + std::size_t(c.tokens) * row);
    std::copy(span.begin(), span.end(), cache.begin() + to);
  }
}

void run_copy_kv(int block_size, int row, const emu::Mode& mode) {
  const std::string what = "copy_kv_blocks block_size " + std::to_string(block_size) + " row " + std::to_string(row) +
                           " in mode " + mode.name;
  const int num_blocks = 8;
  const std::size_t size = std::size_t(num_blocks) * block_size * row;
  const auto k0 = ot_test::random_floats(size, -2.0f, 2.0f, 30 + size),
             v0 = ot_test::random_floats(size, -2.0f, 2.0f, 31 + size);
  // Destinations are never sources (copy-on-write); a self-copy is harmless.
  const std::vector<Copy> copies{
      {0, 3, block_size}, {1, 4, 1}, {2, 5, 0}, {6, 6, block_size}, {2, 7, (block_size + 1) / 2}};
  std::vector<std::int32_t> from, to, tokens;
  for (const auto& c : copies) from.push_back(c.from), to.push_back(c.to), tokens.push_back(c.tokens);
  auto kc = k0, vc = v0, want_k = k0, want_v = v0;
  copy_kv_reference(want_k, block_size, row, copies);
  copy_kv_reference(want_v, block_size, row, copies);
  on_device(mode.options, [&] {
    EXPECT_OK(ot_cuda_copy_kv_blocks_f32(kc.data(), vc.data(), block_size, row, from.data(), to.data(), tokens.data(),
                                         int(copies.size()), nullptr),
              what);
  });
  EXPECT_SAME(kc, want_k, what + " keys");
  EXPECT_SAME(vc, want_v, what + " values");
}

// out[o] += Σ_r dy[r, o], against float64 (and the CPU's f32 row order), judged
// against |out| + Σ |dy| (the terms may cancel).
void run_sum_rows(int rows, int d, const emu::Mode& mode) {
  const std::string what = "sum_rows " + std::to_string(rows) + "x" + std::to_string(d) + " in mode " + mode.name;
  const auto dy = ot_test::random_floats(std::size_t(rows) * d, -2.0f, 2.0f, 40 + rows * 1000 + d);
  const auto out0 = ot_test::random_floats(std::size_t(d) + 1, -4.0f, 4.0f, 41 + d);
  auto out = out0;
  on_device(mode.options, [&] { EXPECT_OK(ot_cuda_sum_rows_f32(dy.data(), rows, d, out.data(), nullptr), what); });
  ot_test::Worst w, cpu;
  for (int o = 0; o < d; ++o) {
    double ref = out0[o], mag = std::abs(out0[o]);
    float f32 = out0[o];
    for (int r = 0; r < rows; ++r) {
      const float v = dy[std::size_t(r) * d + o];
      ref += v, mag += std::abs(v), f32 += v;
    }
    w.add(out[o], ref, mag, o);
    cpu.add(out[o], f32, mag, o);
  }
  EXPECT_WITHIN(w, 1e-5, what + " vs float64");
  EXPECT_WITHIN(cpu, 1e-5, what + " vs the CPU's f32 order");
  CHECK(out.back() == out0.back());  // the guard past d
}

}  // namespace

TEST(row_ops_elementwise_in_every_mode) {
  std::vector<std::int64_t> counts{1, 4, 7, 257, 1001, 3001};
  if (large()) counts.push_back(1 << 20);
  for (const auto& mode : ot_test::op_modes()) {
    for (const std::int64_t count : counts) run_elementwise(count, 0, mode);     // 16-byte aligned: packs plus a tail
    for (const std::int64_t count : {7, 1001}) run_elementwise(count, 1, mode);  // unaligned: element by element
  }
}

TEST(row_ops_add_bias_gather_scatter_in_every_mode) {
  std::vector<std::pair<int, int>> shapes{{1, 1}, {3, 7}, {2, 32}, {5, 130}, {4, 1000}, {6, 1027}};
  if (large()) shapes.push_back({300, 4096});
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& [rows, d] : shapes) {
      run_rows(rows, d, 0, mode);
      run_rows(rows, d, 1, mode);
    }
  }
}

TEST(row_ops_copy_kv_blocks_in_every_mode) {
  std::vector<std::pair<int, int>> shapes{{1, 1}, {3, 5}, {16, 8}, {4, 130}, {16, 1024}};
  if (large()) shapes.push_back({32, 4096});
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& [block_size, row] : shapes) run_copy_kv(block_size, row, mode);
  }
}

TEST(row_ops_sum_rows_in_every_mode) {
  std::vector<std::pair<int, int>> shapes{{1, 1}, {3, 7}, {9, 33}, {17, 130}, {40, 257}, {1, 1000}};
  if (large()) shapes.push_back({512, 4096});
  for (const auto& mode : ot_test::op_modes()) {
    for (const auto& [rows, d] : shapes) run_sum_rows(rows, d, mode);
  }
}

// Grids smaller than the work, which the launchers only pick past 4096 blocks
// (elementwise) or 65535 rows / copies: the bodies' grid-stride loops by hand.
TEST(row_ops_grid_stride_on_small_grids) {
  for (const auto& mode : ot_test::op_modes()) {
    const std::string in = " in mode " + mode.name;
    const std::int64_t count = 1001;
    const auto t0 = ot_test::random_floats(count, -2.0f, 2.0f, 50), s = ot_test::random_floats(count, -2.0f, 2.0f, 51);
    auto t = t0, want = t0;
    for (std::int64_t i = 0; i < count; ++i) want[i] = t0[i] + s[i];
    emu::launch(ot_cuda::Dim3{2}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options,
                [&](auto& ctx) { k::add_in_place_f32(ctx, t.data(), s.data(), count); });
    EXPECT_SAME(t, want, "add_in_place on 2 blocks" + in);

    std::vector<double> f(999, 0.0);
    emu::launch(ot_cuda::Dim3{1}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options,
                [&](auto& ctx) { k::fill(ctx, f.data(), std::int64_t{999}, 2.5); });
    EXPECT_SAME(f, std::vector<double>(999, 2.5), "fill_f64 on 1 block" + in);

    const int rows = 9, d = 12;
    const auto source = ot_test::random_floats(std::size_t(rows) * d, -2.0f, 2.0f, 52);
    std::vector<std::int32_t> idx(rows);
    for (int i = 0; i < rows; ++i) idx[i] = rows - 1 - i;
    auto out = ot_test::nan_floats(source.size()), want_out = out;
    for (int i = 0; i < rows; ++i) {
      for (int c = 0; c < d; ++c) want_out[std::size_t(i) * d + c] = source[std::size_t(idx[i]) * d + c];
    }
    emu::launch(ot_cuda::Dim3{2}, ot_cuda::Dim3{32}, 0, mode.options,
                [&](auto& ctx) { k::gather_rows_f32(ctx, source.data(), idx.data(), rows, d, out.data()); });
    EXPECT_SAME(out, want_out, "gather_rows on 2 blocks" + in);
    auto back = ot_test::nan_floats(source.size());
    emu::launch(ot_cuda::Dim3{3}, ot_cuda::Dim3{32}, 0, mode.options,
                [&](auto& ctx) { k::scatter_rows_f32(ctx, back.data(), idx.data(), rows, d, out.data()); });
    EXPECT_SAME(back, source, "scatter_rows on 3 blocks" + in);
    auto y = source, want_y = source;
    for (std::size_t i = 0; i < y.size(); ++i) want_y[i] = source[i] + source[i % d];
    emu::launch(ot_cuda::Dim3{4}, ot_cuda::Dim3{32}, 0, mode.options,
                [&](auto& ctx) { k::add_bias_f32(ctx, y.data(), source.data(), rows, d); });
    EXPECT_SAME(y, want_y, "add_bias on 4 blocks" + in);

    // Five copies over grid.y = 2, each span over one block along x.
    const int block_size = 4, row = 9;
    const auto k0 = ot_test::random_floats(std::size_t(9) * block_size * row, -2.0f, 2.0f, 53);
    const std::vector<Copy> copies{{0, 5, 4}, {1, 6, 3}, {2, 7, 1}, {3, 3, 2}, {4, 8, 4}};
    std::vector<std::int32_t> from, to, tokens;
    for (const auto& c : copies) from.push_back(c.from), to.push_back(c.to), tokens.push_back(c.tokens);
    auto kc = k0, vc = k0, want_k = k0;
    copy_kv_reference(want_k, block_size, row, copies);
    emu::launch(ot_cuda::Dim3{1, 2}, ot_cuda::Dim3{32}, 0, mode.options, [&](auto& ctx) {
      k::copy_kv_blocks_f32(ctx, kc.data(), vc.data(), block_size, row, from.data(), to.data(), tokens.data(), 5);
    });
    EXPECT_SAME(kc, want_k, "copy_kv_blocks on grid {1, 2}, keys" + in);
    EXPECT_SAME(vc, want_k, "copy_kv_blocks on grid {1, 2}, values" + in);
  }
}

TEST(row_ops_launchers_validate_and_skip_empty_work) {
  std::vector<float> buf(4, kNaN);
  std::vector<std::int32_t> idx{0}, ibuf(4, 9);
  std::vector<double> dbuf(4, 9.0);
  float* p = buf.data();
  CHECK_EQ(ot_cuda_add_in_place_f32(p, p, -1, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_scale_f32(p, -1, 2.0, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_fill_f32(p, -1, 0.0f, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_fill_i32(ibuf.data(), -1, 0, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_fill_f64(dbuf.data(), -1, 0.0, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_add_bias_f32(p, p, -1, 4, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_add_bias_f32(p, p, 1, -4, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_gather_rows_f32(p, idx.data(), -1, 4, p, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_scatter_rows_f32(p, idx.data(), 1, -4, p, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_copy_kv_blocks_f32(p, p, 0, 4, idx.data(), idx.data(), idx.data(), 1, nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_copy_kv_blocks_f32(p, p, 1, 0, idx.data(), idx.data(), idx.data(), 1, nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_copy_kv_blocks_f32(p, p, 1, 4, idx.data(), idx.data(), idx.data(), -1, nullptr),
           cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_sum_rows_f32(p, -1, 4, p, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_sum_rows_f32(p, 1, -4, p, nullptr), cudaErrorInvalidValue);

  // Empty work: success, nothing touched (the NaN / 9 sentinels stay).
  CHECK_EQ(ot_cuda_add_in_place_f32(p, p, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_scale_f32(p, 0, 2.0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_fill_f32(p, 0, 0.0f, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_fill_i32(ibuf.data(), 0, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_fill_f64(dbuf.data(), 0, 0.0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_add_bias_f32(p, p, 0, 4, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_add_bias_f32(p, p, 1, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_gather_rows_f32(p, idx.data(), 0, 4, p, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_scatter_rows_f32(p, idx.data(), 0, 4, p, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_copy_kv_blocks_f32(p, p, 1, 4, idx.data(), idx.data(), idx.data(), 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_sum_rows_f32(p, 0, 4, p, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_sum_rows_f32(p, 4, 0, p, nullptr), cudaSuccess);
  for (float v : buf) CHECK(std::isnan(v));
  CHECK(ibuf == std::vector<std::int32_t>(4, 9));
  CHECK(dbuf == std::vector<double>(4, 9.0));
}

TEST(row_ops_launch_shapes) {
  // Whole warps covering a row's 4-float packs, 1 to 8 of them.
  CHECK_EQ(k::row_block_threads(1), 32);
  CHECK_EQ(k::row_block_threads(132), 64);  // 33 packs
  CHECK_EQ(k::row_block_threads(100000), 256);
  CHECK_EQ(k::row_blocks(0), 1u);
  CHECK_EQ(k::row_blocks(70000), 65535u);
  // One 16-byte pack per thread: 4 floats, 2 doubles.
  CHECK_EQ(k::pack_blocks<float>(1), 1u);
  CHECK_EQ(k::pack_blocks<float>(1025), 2u);
  CHECK_EQ(k::pack_blocks<double>(1024), 2u);
  CHECK_EQ(k::pack_blocks<float>(std::int64_t{1} << 40), 4096u);
  CHECK_EQ(k::copy_kv_chunks(16, 1024), 16u);
  CHECK_EQ(k::copy_kv_chunks(1, 1), 1u);
  CHECK_EQ(k::copy_kv_chunks(256, 8192), 64u);
  CHECK_EQ(k::sum_rows_blocks(33), 2u);
  CHECK_EQ(k::sum_rows_shared_bytes(), std::size_t{256 * 8});
}
