// kernels/lora.cuh in the CPU execution, in every checking mode: the forward
// and the backward against a plain double-precision reference and against the
// CPU backend (../../src/cpu/lora.cc), <= 1e-5 per element relative to the
// sum of its terms' magnitudes (y0 + delta can cancel); and the
// host-side segment list.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../src/cpu/lora.h"
#include "../kernels/lora.cuh"
#include "check.h"
#include "lora_data.h"

namespace {

namespace k = ot_cuda::kernels;
using ot_cuda::Dim3;

struct Case {
  const char* name;
  int d_in, d_out;
  std::vector<int> ranks;
  std::vector<std::int32_t> slots;
};

using Data = ot_test::LoraData;

Data make_data(const Case& c, std::uint64_t seed) {
  return ot_test::make_lora_data(c.d_in, c.d_out, c.ranks, c.slots.size(), seed);
}

struct Result {
  std::vector<double> y, dx;
  std::vector<std::vector<double>> da, db;
};

// The definition, in double: t = x·Aᵀ, y += s·t·Bᵀ; u = s·dy·B, dx += u·A,
// dA += uᵀ·x, dB += s·dyᵀ·t.
Result reference(const Case& c, const Data& d) {
  const int n = static_cast<int>(c.slots.size());
  Result res;
  res.y.assign(d.y0.begin(), d.y0.end());
  res.dx.assign(d.dx0.begin(), d.dx0.end());
  for (std::size_t a = 0; a < c.ranks.size(); ++a) {
    res.da.emplace_back(d.da0[a].begin(), d.da0[a].end());
    res.db.emplace_back(d.db0[a].begin(), d.db0[a].end());
  }
  for (int i = 0; i < n; ++i) {
    const int a = c.slots[i];
    if (a < 0) continue;
    const int r = c.ranks[a];
    const double s = d.scales[a];
    std::vector<double> t(r, 0.0), u(r, 0.0);
    for (int q = 0; q < r; ++q) {
      for (int k = 0; k < c.d_in; ++k) t[q] += double(d.x[i * c.d_in + k]) * d.a[a][q * c.d_in + k];
      for (int o = 0; o < c.d_out; ++o) u[q] += s * double(d.dy[i * c.d_out + o]) * d.b[a][o * r + q];
    }
    for (int o = 0; o < c.d_out; ++o) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += t[q] * d.b[a][o * r + q];
      res.y[i * c.d_out + o] += s * acc;
      for (int q = 0; q < r; ++q) res.db[a][o * r + q] += s * double(d.dy[i * c.d_out + o]) * t[q];
    }
    for (int k = 0; k < c.d_in; ++k) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += u[q] * d.a[a][q * c.d_in + k];
      res.dx[i * c.d_in + k] += acc;
      for (int q = 0; q < r; ++q) res.da[a][q * c.d_in + k] += u[q] * double(d.x[i * c.d_in + k]);
    }
  }
  return res;
}

// The CPU backend on the same data (its GEMM path and its row path both).
Result cpu_backend(const Case& c, const Data& d, bool row_invariant) {
  const std::int64_t n = static_cast<std::int64_t>(c.slots.size()), count = static_cast<std::int64_t>(c.ranks.size());
  std::vector<ot::LoraAdapter> table;
  for (std::int64_t a = 0; a < count; ++a) table.push_back({d.a[a].data(), d.b[a].data(), c.ranks[a], d.scales[a]});
  std::vector<float> y = d.y0, dx = d.dx0;
  std::vector<std::vector<float>> da = d.da0, db = d.db0;
  std::vector<ot::LoraGrad> grads;
  for (std::int64_t a = 0; a < count; ++a) grads.push_back({da[a].data(), db[a].data()});
  const ot::LoraShape shape{n, c.d_in, c.d_out};
  ot::lora_forward(shape, d.x.data(), c.slots.data(), table.data(), count, y.data(), row_invariant);
  ot::lora_backward(shape, d.x.data(), d.dy.data(), c.slots.data(), table.data(), count, dx.data(), grads.data());
  Result res{{y.begin(), y.end()}, {dx.begin(), dx.end()}, {}, {}};
  for (std::int64_t a = 0; a < count; ++a) {
    res.da.emplace_back(da[a].begin(), da[a].end());
    res.db.emplace_back(db[a].begin(), db[a].end());
  }
  return res;
}

// The kernels' launches in the CPU execution, as lora.cu's launchers order them.
Result run_kernels(const Case& c, const Data& d, const ot_cuda::emu::Options& options) {
  const int n = static_cast<int>(c.slots.size()), count = static_cast<int>(c.ranks.size());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<k::LoraSegment> segments;
  if (!k::lora_build_segments(c.slots.data(), n, count, segments)) throw std::runtime_error("bad slots");
  const int rank_stride = *std::max_element(c.ranks.begin(), c.ranks.end());
  std::vector<k::LoraAdapterF32> adapters;
  for (int a = 0; a < count; ++a) adapters.push_back({d.a[a].data(), d.b[a].data(), c.ranks[a], d.scales[a]});
  std::vector<float> y = d.y0, dx = d.dx0;
  std::vector<std::vector<float>> da = d.da0, db = d.db0;
  std::vector<k::LoraGradF32> grads;
  for (int a = 0; a < count; ++a) grads.push_back({da[a].data(), db[a].data()});
  // Poisoned workspaces: a partial sum read before it is written fails the check.
  std::vector<float> fwd(k::lora_forward_workspace_floats(n, c.d_in, rank_stride), nan);
  std::vector<float> bwd(k::lora_backward_workspace_floats(n, c.d_in, c.d_out, rank_stride), nan);
  float* t_parts = bwd.data();
  float* u_parts = bwd.data() + k::lora_parts_floats(n, c.d_in, rank_stride);

  const unsigned segs = static_cast<unsigned>(segments.size());
  const int in_tiles = k::lora_tiles(c.d_in, k::kLoraShrinkTile), out_tiles = k::lora_tiles(c.d_out, k::kLoraShrinkTile);
  const Dim3 block{k::kLoraThreads};
  auto grid = [&](int tiles) { return Dim3{segs, static_cast<unsigned>(tiles)}; };
  using M = k::LoraMatrix;
  namespace emu = ot_cuda::emu;
  if (segs > 0) {
    // Forward.
    emu::launch(grid(in_tiles), block, k::lora_shrink_shared_bytes(), options, [&](auto& ctx) {
      k::lora_shrink(ctx, segments.data(), adapters.data(), M::A, d.x.data(), n, c.d_in, fwd.data(), rank_stride);
    });
    emu::launch(grid(k::lora_tiles(c.d_out, k::kLoraTile)), block, k::lora_expand_shared_bytes(), options,
                [&](auto& ctx) {
                  k::lora_expand(ctx, segments.data(), adapters.data(), M::B, fwd.data(), in_tiles, n, rank_stride,
                                 y.data(), c.d_out);
                });
    // Backward.
    emu::launch(grid(in_tiles), block, k::lora_shrink_shared_bytes(), options, [&](auto& ctx) {
      k::lora_shrink(ctx, segments.data(), adapters.data(), M::A, d.x.data(), n, c.d_in, t_parts, rank_stride);
    });
    emu::launch(grid(out_tiles), block, k::lora_shrink_shared_bytes(), options, [&](auto& ctx) {
      k::lora_shrink(ctx, segments.data(), adapters.data(), M::B, d.dy.data(), n, c.d_out, u_parts, rank_stride);
    });
    emu::launch(grid(k::lora_tiles(c.d_in, k::kLoraTile)), block, k::lora_expand_shared_bytes(), options,
                [&](auto& ctx) {
                  k::lora_expand(ctx, segments.data(), adapters.data(), M::A, u_parts, out_tiles, n, rank_stride,
                                 dx.data(), c.d_in);
                });
    emu::launch(grid(k::lora_tiles(c.d_in, k::kLoraTile)), block, k::lora_grad_shared_bytes(), options,
                [&](auto& ctx) {
                  k::lora_grad(ctx, segments.data(), adapters.data(), grads.data(), M::A, u_parts, out_tiles, n,
                               rank_stride, d.x.data(), c.d_in);
                });
    emu::launch(grid(k::lora_tiles(c.d_out, k::kLoraTile)), block, k::lora_grad_shared_bytes(), options,
                [&](auto& ctx) {
                  k::lora_grad(ctx, segments.data(), adapters.data(), grads.data(), M::B, t_parts, in_tiles, n,
                               rank_stride, d.dy.data(), c.d_out);
                });
  }
  Result res{{y.begin(), y.end()}, {dx.begin(), dx.end()}, {}, {}};
  for (int a = 0; a < count; ++a) {
    res.da.emplace_back(da[a].begin(), da[a].end());
    res.db.emplace_back(db[a].begin(), db[a].end());
  }
  return res;
}

// The same data with every value replaced by its magnitude: the reference
// over it is, per element, the sum of the magnitudes of the terms (the scale a
// float sum's rounding error is relative to; y0 + delta may cancel to ~0).
Data magnitudes(const Data& d) { return ot_test::lora_magnitudes(d); }

// Worst error of got against want relative to the terms' magnitudes (inf on NaN).
double worst(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& scale) {
  double w = 0;
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / std::max(scale[i], 1e-30);
    if (!(err <= w)) w = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return w;
}

void compare(const Result& got, const Result& want, const Result& scale, const std::string& what, double tol) {
  auto one = [&](const std::vector<double>& g, const std::vector<double>& w, const std::vector<double>& sc,
                 const std::string& name) {
    const double e = worst(g, w, sc);
    if (!(e <= tol)) ot_test::fail(__FILE__, __LINE__, what + " " + name + ": relative error " + std::to_string(e));
  };
  one(got.y, want.y, scale.y, "y");
  one(got.dx, want.dx, scale.dx, "dx");
  for (std::size_t a = 0; a < want.da.size(); ++a) {
    one(got.da[a], want.da[a], scale.da[a], "dA[" + std::to_string(a) + "]");
    one(got.db[a], want.db[a], scale.db[a], "dB[" + std::to_string(a) + "]");
  }
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // A prefill run of adapter 0 longer than a segment (8 + 3 rows), decode rows
  // of every adapter, rows without one, a run of adapter 1 in the middle.
  cs.push_back({"mixed 40x24 ranks 1/3/8", 40, 24, {1, 3, 8},
                {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 2, -1, 1, 1, 1, 2, 0, 2, 2, 2, -1}});
  // More than one shrink tile (dIn 300 > 256) and expand tile (dOut 130 > 128), rank 64.
  cs.push_back({"tiles 300x130 ranks 64/5", 300, 130, {64, 5}, {1, 0, 0, 0, -1, 1, 1, 0}});
  // Only rows without adapters: the op leaves everything as it was.
  cs.push_back({"no adapter rows", 40, 24, {3}, {-1, -1, -1}});
  return cs;
}

}  // namespace

TEST(lora_segments_from_slots) {
  std::vector<k::LoraSegment> s;
  const std::vector<std::int32_t> slots{2, 2, 2, -1, 0, 1, 1, -1, -1, 0, 0, 0, 0, 0};
  CHECK(k::lora_build_segments(slots.data(), static_cast<int>(slots.size()), 3, s, 3));
  // (row_begin, rows, slot): the run of 2s, lone 0, run of 1s, the run of five 0s cut 3 + 2.
  const std::vector<std::vector<int>> want{{0, 3, 2}, {4, 1, 0}, {5, 2, 1}, {9, 3, 0}, {12, 2, 0}};
  CHECK_EQ(s.size(), want.size());
  for (std::size_t i = 0; i < std::min(s.size(), want.size()); ++i) {
    CHECK_EQ(s[i].row_begin, want[i][0]);
    CHECK_EQ(s[i].rows, want[i][1]);
    CHECK_EQ(s[i].slot, want[i][2]);
  }
  // Default cut: kLoraSegRows.
  const std::vector<std::int32_t> run(19, 1);
  CHECK(k::lora_build_segments(run.data(), 19, 2, s));
  CHECK_EQ(s.size(), std::size_t{3});
  if (s.size() == 3) CHECK_EQ(s[2].rows, 19 - 2 * k::kLoraSegRows);
  // Empty, all -1, invalid slots, invalid cut.
  CHECK(k::lora_build_segments(nullptr, 0, 1, s));
  CHECK(s.empty());
  const std::vector<std::int32_t> none{-1, -1};
  CHECK(k::lora_build_segments(none.data(), 2, 1, s));
  CHECK(s.empty());
  const std::vector<std::int32_t> too_big{0, 3}, too_small{0, -2};
  CHECK(!k::lora_build_segments(too_big.data(), 2, 3, s));
  CHECK(s.empty());
  CHECK(!k::lora_build_segments(too_small.data(), 2, 3, s));
  CHECK(!k::lora_build_segments(slots.data(), 2, 3, s, 0));
  CHECK(!k::lora_build_segments(slots.data(), 2, 3, s, k::kLoraSegRows + 1));
}

TEST(lora_matches_reference_and_cpu_backend_in_every_mode) {
  auto modes = ot_cuda::emu::checking_modes(5);
  modes.push_back({"all-checks seed 13, 2 workers", ot_cuda::emu::checking_modes(13)[4].options});
  modes.back().options.workers = 2;
  for (const auto& c : cases()) {
    const Data d = make_data(c, 1234 + static_cast<std::uint64_t>(c.d_in));
    const Result want = reference(c, d), scale = reference(c, magnitudes(d));
    // The CPU backend against the definition first (both of its forward paths).
    compare(cpu_backend(c, d, false), want, scale, std::string("cpu backend ") + c.name, 1e-5);
    const Result cpu = cpu_backend(c, d, true);
    compare(cpu, want, scale, std::string("cpu backend row-invariant ") + c.name, 1e-5);
    for (const auto& mode : modes) {
      const Result got = run_kernels(c, d, mode.options);
      compare(got, want, scale, std::string("lora ") + c.name + " in mode " + mode.name + " vs float64", 1e-5);
      compare(got, cpu, scale, std::string("lora ") + c.name + " in mode " + mode.name + " vs cpu backend", 1e-5);
    }
  }
}

TEST(lora_large_shape) {
  const char* large = std::getenv("OT_CUDA_EMU_LARGE");
  if (large == nullptr || large[0] != '1') return;
  std::vector<std::int32_t> slots;
  for (int i = 0; i < 40; ++i) slots.push_back(i < 20 ? 0 : i % 4 - 1);  // a prefill run, then decode rows
  const Case c{"large 1024x768 ranks 64/16/8", 1024, 768, {64, 16, 8}, slots};
  const Data d = make_data(c, 7);
  compare(run_kernels(c, d, ot_cuda::emu::checking_modes(3)[4].options), reference(c, d), reference(c, magnitudes(d)),
          c.name, 1e-5);
}
