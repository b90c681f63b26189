// kernels/lora_rows.cuh in the CPU execution, in every checking mode: the
// forward and the backward (with and without dx) against a plain
// double-precision reference and against the CPU backend
// (../../src/cpu/lora.cc), <= 1e-5 per element relative to the sum of its
// terms' magnitudes (y0 + delta can cancel); results bitwise the same in every
// mode and worker count (but for gradients two slots share), a row's delta bitwise the same alone as in a batch,
// and slots outside [0, count) leaving their rows alone. y, dx and the
// gradients accumulate, so the poisoned (NaN) buffers are the workspaces: a
// partial sum read before it is written fails the check.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../src/cpu/lora.h"
#include "../include/ot_cuda/launch.h"
#include "../kernels/launchers.h"
#include "../kernels/lora_rows.cuh"
#include "lora_data.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;
using ot_cuda::Dim3;

struct Case {
  const char* name;
  int d_in, d_out;
  std::vector<int> ranks;
  std::vector<std::int32_t> slots;
  int alias = -1;  // >= 0: the last slot is this adapter again (same weights, same gradient buffers)
};

int adapter_count(const Case& c) { return static_cast<int>(c.ranks.size()) + (c.alias >= 0 ? 1 : 0); }
// The adapter whose weights and gradients slot a uses.
int owner(const Case& c, int a) { return a < static_cast<int>(c.ranks.size()) ? a : c.alias; }
// The slot the kernels act on: out of [0, count) means none.
int valid_slot(const Case& c, int i) {
  const int s = c.slots[i];
  return s >= 0 && s < adapter_count(c) ? s : -1;
}

using Data = ot_test::LoraData;

Data make_data(const Case& c, std::uint64_t seed) {
  return ot_test::make_lora_data(c.d_in, c.d_out, c.ranks, c.slots.size(), seed);
}

// The same data with every value replaced by its magnitude: the reference over
// it is, per element, the sum of the magnitudes of the terms.
Data magnitudes(const Data& d) { return ot_test::lora_magnitudes(d); }

template <class T>
struct Result {
  std::vector<T> y, dx;
  std::vector<std::vector<T>> da, db;  // per owned adapter
};

template <class T>
Result<T> as(const std::vector<float>& y, const std::vector<float>& dx, const std::vector<std::vector<float>>& da,
             const std::vector<std::vector<float>>& db) {
  Result<T> r{{y.begin(), y.end()}, {dx.begin(), dx.end()}, {}, {}};
  for (std::size_t a = 0; a < da.size(); ++a) {
    r.da.emplace_back(da[a].begin(), da[a].end());
    r.db.emplace_back(db[a].begin(), db[a].end());
  }
  return r;
}

// The definition, in double: t = x·Aᵀ, y += s·t·Bᵀ; u = s·dy·B, dx += u·A,
// dA += uᵀ·x, dB += s·dyᵀ·t.
Result<double> reference(const Case& c, const Data& d) {
  const int n = static_cast<int>(c.slots.size());
  Result<double> res = as<double>(d.y0, d.dx0, d.da0, d.db0);
  for (int i = 0; i < n; ++i) {
    if (valid_slot(c, i) < 0) continue;
    const int a = owner(c, valid_slot(c, i)), r = c.ranks[a];
    const double s = d.scales[a];
    std::vector<double> t(r, 0.0), u(r, 0.0);
    for (int q = 0; q < r; ++q) {
      for (int j = 0; j < c.d_in; ++j) t[q] += double(d.x[i * c.d_in + j]) * d.a[a][q * c.d_in + j];
      for (int o = 0; o < c.d_out; ++o) u[q] += s * double(d.dy[i * c.d_out + o]) * d.b[a][o * r + q];
    }
    for (int o = 0; o < c.d_out; ++o) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += t[q] * d.b[a][o * r + q];
      res.y[i * c.d_out + o] += s * acc;
      for (int q = 0; q < r; ++q) res.db[a][o * r + q] += s * double(d.dy[i * c.d_out + o]) * t[q];
    }
    for (int j = 0; j < c.d_in; ++j) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += u[q] * d.a[a][q * c.d_in + j];
      res.dx[i * c.d_in + j] += acc;
      for (int q = 0; q < r; ++q) res.da[a][q * c.d_in + j] += u[q] * double(d.x[i * c.d_in + j]);
    }
  }
  return res;
}

// The CPU backend on the same data, its row-invariant forward (a row at a time).
Result<double> cpu_backend(const Case& c, const Data& d) {
  const std::int64_t n = static_cast<std::int64_t>(c.slots.size()), count = adapter_count(c);
  std::vector<float> y = d.y0, dx = d.dx0;
  std::vector<std::vector<float>> da = d.da0, db = d.db0;
  std::vector<ot::LoraAdapter> table;
  std::vector<ot::LoraGrad> grads;
  for (std::int64_t s = 0; s < count; ++s) {
    const int a = owner(c, static_cast<int>(s));
    table.push_back({d.a[a].data(), d.b[a].data(), c.ranks[a], d.scales[a]});
    grads.push_back({da[a].data(), db[a].data()});
  }
  const ot::LoraShape shape{n, c.d_in, c.d_out};
  ot::lora_forward(shape, d.x.data(), c.slots.data(), table.data(), count, y.data(), true);
  ot::lora_backward(shape, d.x.data(), d.dy.data(), c.slots.data(), table.data(), count, dx.data(), grads.data());
  return as<double>(y, dx, da, db);
}

// The kernels' launches in the CPU execution, as lora_rows.cu's launchers
// order them (with_dx false: the backward's dx is null).
Result<float> run_kernels(const Case& c, const Data& d, const emu::Options& options, bool with_dx = true) {
  const int n = static_cast<int>(c.slots.size()), count = adapter_count(c);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int rank_stride = *std::max_element(c.ranks.begin(), c.ranks.end());
  std::vector<float> y = d.y0, dx = d.dx0;
  std::vector<std::vector<float>> da = d.da0, db = d.db0;
  std::vector<k::LoraAdapterF32> adapters;
  std::vector<k::LoraGradF32> grads;
  for (int s = 0; s < count; ++s) {
    const int a = owner(c, s);
    adapters.push_back({d.a[a].data(), d.b[a].data(), c.ranks[a], d.scales[a]});
    grads.push_back({da[a].data(), db[a].data()});
  }
  std::vector<float> fwd(k::lora_rows_forward_workspace_floats(n, c.d_in, rank_stride), nan);
  std::vector<float> bwd(k::lora_rows_backward_workspace_floats(n, c.d_in, c.d_out, rank_stride), nan);
  float* t = bwd.data();
  float* u = bwd.data() + k::lora_rows_parts_floats(n, c.d_in, rank_stride);
  const std::int32_t* slots = c.slots.data();
  const k::LoraAdapterF32* table = adapters.data();
  if (n == 0 || count == 0) return as<float>(y, dx, da, db);  // the launchers' early return

  const unsigned rows = static_cast<unsigned>(n);
  const int in_splits = k::lora_rows_splits(c.d_in), out_splits = k::lora_rows_splits(c.d_out);
  const Dim3 block{k::kLoraRowsThreads};
  auto by_rows = [&](int y_blocks) { return Dim3{rows, static_cast<unsigned>(y_blocks)}; };
  auto tiles = [](int width) { return k::lora_tiles(width, k::kLoraRowsChunk); };
  // Forward.
  emu::launch(by_rows(in_splits), block, k::lora_rows_shrink_a_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_shrink_a(ctx, slots, table, count, d.x.data(), n, c.d_in, fwd.data(), rank_stride);
  });
  emu::launch(by_rows(tiles(c.d_out)), block, k::lora_rows_expand_b_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_expand_b(ctx, slots, table, count, fwd.data(), in_splits, n, rank_stride, y.data(), c.d_out);
  });
  // Backward.
  emu::launch(by_rows(in_splits), block, k::lora_rows_shrink_a_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_shrink_a(ctx, slots, table, count, d.x.data(), n, c.d_in, t, rank_stride);
  });
  emu::launch(by_rows(out_splits), block, k::lora_rows_shrink_b_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_shrink_b(ctx, slots, table, count, d.dy.data(), n, c.d_out, u, rank_stride);
  });
  const Dim3 reduce_grid{static_cast<unsigned>(k::lora_rows_reduce_blocks(n, rank_stride))};
  emu::launch(reduce_grid, block, 0, options,
              [&](auto& ctx) { k::lora_rows_reduce(ctx, slots, table, count, t, in_splits, n, rank_stride); });
  emu::launch(reduce_grid, block, 0, options,
              [&](auto& ctx) { k::lora_rows_reduce(ctx, slots, table, count, u, out_splits, n, rank_stride); });
  if (with_dx) {
    emu::launch(by_rows(tiles(c.d_in)), block, k::lora_rows_expand_a_shared_bytes(), options, [&](auto& ctx) {
      k::lora_rows_expand_a(ctx, slots, table, count, u, 1, n, rank_stride, dx.data(), c.d_in);
    });
  }
  const unsigned q_chunks = static_cast<unsigned>(k::lora_rows_grad_q_chunks(rank_stride));
  auto grad_grid = [&](int width) { return Dim3{static_cast<unsigned>(tiles(width)), q_chunks, unsigned(count)}; };
  emu::launch(grad_grid(c.d_in), block, k::lora_rows_grad_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_grad(ctx, slots, table, grads.data(), count, k::LoraMatrix::A, u, n, rank_stride, d.x.data(), c.d_in);
  });
  emu::launch(grad_grid(c.d_out), block, k::lora_rows_grad_shared_bytes(), options, [&](auto& ctx) {
    k::lora_rows_grad(ctx, slots, table, grads.data(), count, k::LoraMatrix::B, t, n, rank_stride, d.dy.data(),
                      c.d_out);
  });
  return as<float>(y, dx, da, db);
}

// The same through lora_rows.cu's launchers on the emulated device, with its
// launches in `options`.
Result<float> run_launchers(const Case& c, const Data& d, const emu::Options& options, bool with_dx = true) {
  const int n = static_cast<int>(c.slots.size()), count = adapter_count(c);
  const int rank_stride = *std::max_element(c.ranks.begin(), c.ranks.end());
  std::vector<float> y = d.y0, dx = d.dx0;
  std::vector<std::vector<float>> da = d.da0, db = d.db0;
  std::vector<k::LoraAdapterF32> adapters;
  std::vector<k::LoraGradF32> grads;
  for (int s = 0; s < count; ++s) {
    const int a = owner(c, s);
    adapters.push_back({d.a[a].data(), d.b[a].data(), c.ranks[a], d.scales[a]});
    grads.push_back({da[a].data(), db[a].data()});
  }
  auto fwd = ot_test::nan_floats(k::lora_rows_forward_workspace_floats(n, c.d_in, rank_stride));
  auto bwd = ot_test::nan_floats(k::lora_rows_backward_workspace_floats(n, c.d_in, c.d_out, rank_stride));
  const emu::Options saved = emu::device_options();
  emu::device_options() = options;
  const cudaError_t forward = ot_cuda_lora_rows_forward_f32(d.x.data(), y.data(), n, c.d_in, c.d_out, c.slots.data(),
                                                            adapters.data(), count, rank_stride, fwd.data(), nullptr);
  const cudaError_t backward = ot_cuda_lora_rows_backward_f32(d.x.data(), d.dy.data(), with_dx ? dx.data() : nullptr, n,
                                                              c.d_in, c.d_out, c.slots.data(), adapters.data(),
                                                              grads.data(), count, rank_stride, bwd.data(), nullptr);
  emu::device_options() = saved;
  CHECK_EQ(forward, cudaSuccess);
  CHECK_EQ(backward, cudaSuccess);
  return as<float>(y, dx, da, db);
}

// Every output within tol of want, relative to the magnitudes in scale.
template <class T>
void compare(const Result<float>& got, const Result<T>& want, const Result<double>& scale, const std::string& what,
             double tol) {
  auto one = [&](const std::vector<float>& g, const std::vector<T>& w, const std::vector<double>& sc,
                 const std::string& name) {
    ot_test::Worst worst;
    if (g.size() != w.size()) worst.err = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < std::min(g.size(), w.size()); ++i) worst.add(g[i], double(w[i]), sc[i], i);
    EXPECT_WITHIN(worst, tol, what + " " + name);
  };
  one(got.y, want.y, scale.y, "y");
  one(got.dx, want.dx, scale.dx, "dx");
  for (std::size_t a = 0; a < want.da.size(); ++a) {
    one(got.da[a], want.da[a], scale.da[a], "dA[" + std::to_string(a) + "]");
    one(got.db[a], want.db[a], scale.db[a], "dB[" + std::to_string(a) + "]");
  }
}

bool bitwise_equal(const std::vector<float>& p, const std::vector<float>& q) {
  return p.size() == q.size() &&
         std::equal(p.begin(), p.end(), q.begin(), [](float u, float v) { return std::memcmp(&u, &v, sizeof u) == 0; });
}

// skip: an adapter whose gradients are not compared (two slots share them,
// so the order of their two atomic adds is not fixed).
bool bitwise_equal(const Result<float>& p, const Result<float>& q, int skip = -1) {
  bool same = bitwise_equal(p.y, q.y) && bitwise_equal(p.dx, q.dx) && p.da.size() == q.da.size();
  for (std::size_t a = 0; same && a < p.da.size(); ++a) {
    same = static_cast<int>(a) == skip || (bitwise_equal(p.da[a], q.da[a]) && bitwise_equal(p.db[a], q.db[a]));
  }
  return same;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // Ranks 1/8/16/64, rows without an adapter, every adapter on rows far apart;
  // dIn 300 is three shrink splits and dx tiles, dOut 130 two of each.
  cs.push_back({"mixed 300x130 ranks 1/8/16/64", 300, 130, {1, 8, 16, 64}, {3, 0, -1, 1, 3, 2, 0, -1, 3, 1, 2, 2, 0}});
  // One row, one column each way, rank 64 over a width of 1.
  cs.push_back({"one row 1x1 rank 64", 1, 1, {64}, {0}});
  // Only rows without adapters: the op leaves everything as it was.
  cs.push_back({"no adapter rows", 40, 24, {3}, {-1, -1, -1}});
  // 133 rows: the gradient blocks find them in two chunks of 128. Slot 5 is
  // adapter 1 again (its gradients get two atomic adds per element) and has
  // rows only in the second chunk; adapter 4 has none.
  {
    std::vector<std::int32_t> slots;
    for (int i = 0; i < 128; ++i) slots.push_back((i * 7) % 5 - 1);
    for (std::int32_t s : {5, 3, 5, -1, 5}) slots.push_back(s);
    cs.push_back({"133 rows 40x24 ranks 1/8/16/64/2 + alias", 40, 24, {1, 8, 16, 64, 2}, slots, 1});
  }
  return cs;
}

// 33 chunks each way, more than kLoraRowsMaxSplits: a shrink block sums two
// chunks (and stages B twice). Rank 17 spans two gradient rank chunks.
Case wide_case() { return {"wide 4101x4099 ranks 5/17", 4101, 4099, {5, 17}, {1, -1, 0}}; }

// One case in the given modes: against float64 and the CPU backend, the same
// bits in every mode, and dx null changing nothing but dx.
void check_case(const Case& c, const std::vector<emu::Mode>& modes) {
  const Data d = make_data(c, 1234 + static_cast<std::uint64_t>(c.d_in));
  const Result<double> want = reference(c, d), scale = reference(c, magnitudes(d)), cpu = cpu_backend(c, d);
  std::vector<Result<float>> runs;
  for (const auto& mode : modes) {
    runs.push_back(run_kernels(c, d, mode.options));
    const std::string what = std::string("lora_rows ") + c.name + " in mode " + mode.name;
    compare(runs.back(), want, scale, what + " vs float64", 1e-5);
    compare(runs.back(), cpu, scale, what + " vs cpu backend", 1e-5);
    // Deterministic: no mode, order or worker count changes a bit (but for
    // gradients two slots share).
    if (!bitwise_equal(runs.back(), runs.front(), c.alias)) {
      ot_test::fail(__FILE__, __LINE__, what + ": differs from the first mode");
    }
  }
  // dx null: dx untouched, everything else as before, bit for bit.
  Result<float> no_dx = run_kernels(c, d, modes.back().options, false);
  if (!bitwise_equal(no_dx.dx, d.dx0)) ot_test::fail(__FILE__, __LINE__, std::string(c.name) + ": dx null wrote dx");
  no_dx.dx = runs.front().dx;
  if (!bitwise_equal(no_dx, runs.front(), c.alias)) {
    ot_test::fail(__FILE__, __LINE__, std::string(c.name) + ": dx null changed the other outputs");
  }
}

}  // namespace

TEST(lora_rows_matches_reference_and_cpu_backend_in_every_mode) {
  const auto modes = ot_test::op_modes(5, 13);
  for (const auto& c : cases()) check_case(c, modes);
  // The wide case is ~600 blocks a run: the all-checks mode on two workers only.
  check_case(wide_case(), {modes.back()});
}

TEST(lora_rows_row_delta_independent_of_batch) {
  // A row's y (and dx) alone is bit for bit its y in the batch: splits depend
  // on the width only, and nothing sums across rows.
  const Case batch{"batch", 300, 130, {8, 64}, {1, 0, -1, 1, 1, 0}};
  const Data d = make_data(batch, 77);
  const auto options = ot_test::op_modes()[0].options;
  const Result<float> all = run_kernels(batch, d, options);
  for (std::size_t i = 0; i < batch.slots.size(); ++i) {
    Case one = batch;
    one.slots = {batch.slots[i]};
    Data di = d;
    di.x.assign(d.x.begin() + i * batch.d_in, d.x.begin() + (i + 1) * batch.d_in);
    di.dx0.assign(d.dx0.begin() + i * batch.d_in, d.dx0.begin() + (i + 1) * batch.d_in);
    di.dy.assign(d.dy.begin() + i * batch.d_out, d.dy.begin() + (i + 1) * batch.d_out);
    di.y0.assign(d.y0.begin() + i * batch.d_out, d.y0.begin() + (i + 1) * batch.d_out);
    const Result<float> alone = run_kernels(one, di, options);
    const std::vector<float> y_row(all.y.begin() + i * batch.d_out, all.y.begin() + (i + 1) * batch.d_out);
    const std::vector<float> dx_row(all.dx.begin() + i * batch.d_in, all.dx.begin() + (i + 1) * batch.d_in);
    if (!bitwise_equal(alone.y, y_row) || !bitwise_equal(alone.dx, dx_row)) {
      ot_test::fail(__FILE__, __LINE__, "lora_rows row " + std::to_string(i) + " alone differs from the batch");
    }
  }
}

TEST(lora_rows_empty_work_and_out_of_range_slots) {
  const auto modes = ot_test::op_modes(7, 17);
  // Slots outside [-1, count) name no adapter: those rows stay as they were.
  const Case bad{"out-of-range slots", 37, 45, {4, 16}, {2, 0, -3, 1, 7, -1, 1}};
  const Data d = make_data(bad, 99);
  const Result<double> want = reference(bad, d), scale = reference(bad, magnitudes(d));
  for (const auto& mode : modes) {
    compare(run_kernels(bad, d, mode.options), want, scale, std::string(bad.name) + " in mode " + mode.name, 1e-5);
  }
  // No rows: nothing runs, nothing changes (the launchers return early).
  const Case none{"no rows", 37, 45, {4}, {}};
  const Data dn = make_data(none, 5);
  const Result<float> got = run_kernels(none, dn, modes[0].options);
  CHECK(got.y.empty() && got.dx.empty());
  CHECK(bitwise_equal(got.da[0], dn.da0[0]) && bitwise_equal(got.db[0], dn.db0[0]));
}

TEST(lora_rows_launchers_match_bodies_and_validate) {
  const auto modes = ot_test::op_modes(9, 19);
  for (const Case& c : cases()) {
    const Data d = make_data(c, 31);
    const Result<float> by_hand = run_kernels(c, d, modes[0].options);
    for (const auto* mode : {&modes.front(), &modes.back()}) {
      if (!bitwise_equal(run_launchers(c, d, mode->options), by_hand, c.alias)) {
        ot_test::fail(__FILE__, __LINE__, std::string(c.name) + ": launchers in mode " + mode->name + " differ");
      }
    }
    if (!bitwise_equal(run_launchers(c, d, modes[0].options, false), run_kernels(c, d, modes[0].options, false),
                       c.alias)) {
      ot_test::fail(__FILE__, __LINE__, std::string(c.name) + ": launchers with dx null differ");
    }
  }
  // Validation, and empty work (no rows, no adapters) returning at once.
  std::vector<float> x(8, 1.0f), y(8, 2.0f), ws(64, 0.0f);
  const std::vector<std::int32_t> slots{0, 0};
  const k::LoraAdapterF32 ad{x.data(), x.data(), 1, 1.0f};
  k::LoraGradF32 g{ws.data(), ws.data()};
  auto forward = [&](int n, int d_in, int d_out, int count, int rank_stride, float* workspace) {
    return ot_cuda_lora_rows_forward_f32(x.data(), y.data(), n, d_in, d_out, slots.data(), &ad, count, rank_stride,
                                         workspace, nullptr);
  };
  auto backward = [&](int n, int d_in, int d_out, int count, int rank_stride, float* workspace) {
    return ot_cuda_lora_rows_backward_f32(x.data(), x.data(), nullptr, n, d_in, d_out, slots.data(), &ad, &g, count,
                                          rank_stride, workspace, nullptr);
  };
  for (int which = 0; which < 2; ++which) {
    auto call = [&](int n, int d_in, int d_out, int count, int rank_stride, float* workspace) {
      return which == 0 ? forward(n, d_in, d_out, count, rank_stride, workspace)
                        : backward(n, d_in, d_out, count, rank_stride, workspace);
    };
    CHECK_EQ(call(-1, 2, 2, 1, 1, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 0, 2, 1, 1, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 2, 0, 1, 1, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 2, 2, -1, 1, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 2, 2, 1, 0, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 2, 2, 1, k::kLoraMaxRank + 1, ws.data()), cudaErrorInvalidValue);
    CHECK_EQ(call(2, 2, 2, 1, 1, nullptr), cudaErrorInvalidValue);
    CHECK_EQ(call(0, 2, 2, 1, 1, nullptr), cudaSuccess);
    CHECK_EQ(call(2, 2, 2, 0, 1, nullptr), cudaSuccess);
  }
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 2.0f; }));
  CHECK(std::all_of(ws.begin(), ws.end(), [](float v) { return v == 0.0f; }));
}

TEST(lora_rows_launch_shapes) {
  CHECK_EQ(k::lora_rows_splits(1), 1);
  CHECK_EQ(k::lora_rows_splits(300), 3);
  CHECK_EQ(k::lora_rows_splits(4096), 32);
  CHECK_EQ(k::lora_rows_splits(150000), k::kLoraRowsMaxSplits);  // a vocabulary: the workspace stays bounded
  CHECK_EQ(k::lora_rows_grad_q_chunks(1), 1);
  CHECK_EQ(k::lora_rows_grad_q_chunks(64), 4);
  CHECK_EQ(k::lora_rows_reduce_blocks(3, 64), 2);
  CHECK_EQ(k::lora_rows_parts_floats(5, 300, 16), std::size_t{3 * 5 * 16});
  CHECK_EQ(k::lora_rows_backward_workspace_floats(5, 300, 130, 16), std::size_t{(3 + 2) * 5 * 16});
  // Every block's shared memory within the 48 KiB a launch gets without opting in.
  for (std::size_t bytes : {k::lora_rows_shrink_b_shared_bytes(), k::lora_rows_expand_b_shared_bytes(),
                            k::lora_rows_expand_a_shared_bytes(), k::lora_rows_grad_shared_bytes()}) {
    CHECK(bytes <= 48 * 1024);
  }
}

TEST(lora_rows_large_shape) {
  const char* large = std::getenv("OT_CUDA_EMU_LARGE");
  if (large == nullptr || large[0] != '1') return;
  std::vector<std::int32_t> slots;
  for (int i = 0; i < 40; ++i) slots.push_back(i % 5 - 1);  // decode rows of every adapter, some without
  const Case c{"large 4096x1024 ranks 64/16/8/1", 4096, 1024, {64, 16, 8, 1}, slots};
  const Data d = make_data(c, 7);
  const Result<double> scale = reference(c, magnitudes(d));
  const Result<float> got = run_kernels(c, d, emu::checking_modes(3)[4].options);
  compare(got, reference(c, d), scale, c.name, 1e-5);
  compare(got, cpu_backend(c, d), scale, std::string(c.name) + " vs cpu backend", 1e-5);
}
