// The CPU execution against known CUDA semantics, and each checking mode
// against a kernel it must catch (so the checks are shown able to fail).
#include <atomic>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "../include/ot_cuda/ctx.h"
#include "../include/ot_cuda/reduce.h"
#include "check.h"

using ot_cuda::Dim3;
using ot_cuda::kFullMask;
using ot_cuda::emu::KernelError;
using ot_cuda::emu::launch;
using ot_cuda::emu::Options;

namespace {

// Every mode, a second seed of the random order, and two OS-thread workers.
std::vector<ot_cuda::emu::Mode> all_modes() {
  auto modes = ot_cuda::emu::checking_modes(1);
  auto more = ot_cuda::emu::checking_modes(7);
  modes.push_back({"random-order seed 7", more[1].options});
  modes.push_back({"all-checks seed 7, 2 workers", more[4].options});
  modes.back().options.workers = 2;
  return modes;
}

Options with_race_check(Options o = {}) {
  o.race_check = true;
  return o;
}

}  // namespace

TEST(indices_dims_lanes_and_warps) {
  // A 3-D block of 64 threads (two warps) in a 3-D grid: the ids are CUDA's
  // decomposition of the linear thread index, x fastest; warps are linear.
  const Dim3 grid{3, 2, 2}, block{8, 4, 2};
  const unsigned nt = 64, nb = 12;
  for (const auto& mode : all_modes()) {
    std::vector<int> hits(nb * nt, 0), bad(nb * nt, 0);
    launch(grid, block, 0, mode.options, [&](auto& ctx) {
      const Dim3 t = ctx.thread_idx(), b = ctx.block_idx(), bd = ctx.block_dim(), gd = ctx.grid_dim();
      const unsigned lin = t.x + 8 * (t.y + 4 * t.z);
      const unsigned lb = b.x + 3 * (b.y + 2 * b.z);
      ++hits[lb * nt + lin];
      bad[lb * nt + lin] = lin != ctx.linear_tid() || ctx.lane() != lin % 32 || ctx.warp() != lin / 32 ||
                           bd.x != 8 || bd.y != 4 || bd.z != 2 || gd.x != 3 || gd.y != 2 || gd.z != 2 ||
                           t.x >= 8 || t.y >= 4 || t.z >= 2 || b.x >= 3 || b.y >= 2 || b.z >= 2;
    });
    for (unsigned i = 0; i < nb * nt; ++i) {
      CHECK_EQ(hits[i], 1);
      CHECK_EQ(bad[i], 0);
    }
  }
}

namespace {
// Four phases; in each every thread writes its slot, sync(), reads a
// neighbour's, sync(). An arrival counter checked right after each sync()
// proves no thread leaves a barrier before all have reached it.
void phases_kernel(bool with_sync, const Options& options, std::atomic<int>& bad) {
  const unsigned n = 128;
  std::vector<int> arrived(3, 0);
  launch(Dim3{3}, Dim3{n}, n * sizeof(int), options, [&](auto& ctx) {
    auto s = ot_cuda::shared_array<int>(ctx);
    const unsigned tid = ctx.thread_idx().x, blk = ctx.block_idx().x;
    for (int p = 0; p < 4; ++p) {
      s[tid] = static_cast<int>(tid) * 10 + p;
      ctx.atomic_add(&arrived[blk], 1);
      if (with_sync) ctx.sync();
      if (ctx.atomic_add(&arrived[blk], 0) != static_cast<int>(n) * (p + 1)) ++bad;
      const unsigned other = (tid + 1 + static_cast<unsigned>(p)) % n;
      if (with_sync && s[other] != static_cast<int>(other) * 10 + p) ++bad;
      if (with_sync) ctx.sync();
    }
  });
}
}  // namespace

TEST(sync_is_a_block_barrier) {
  for (const auto& mode : all_modes()) {
    std::atomic<int> bad{0};
    phases_kernel(true, mode.options, bad);
    CHECK_EQ(bad.load(), 0);
  }
  // The same check without the barrier fails: the test can tell.
  std::atomic<int> bad{0};
  phases_kernel(false, Options{}, bad);
  CHECK(bad.load() > 0);
}

namespace {
// What the CUDA Programming Guide says each __shfl_*_sync returns, written
// independently of the emulator's PTX pseudo-code (lanes within one warp).
unsigned expected_source(int op, unsigned lane, int b, unsigned width) {
  const unsigned group = lane / width * width;
  switch (op) {
    case 0:  // idx: srcLane modulo width, within the lane's group
      return group + static_cast<unsigned>(((b % static_cast<int>(width)) + static_cast<int>(width)) %
                                           static_cast<int>(width));
    case 1:  // up: lanes below delta within the group keep their value
      return lane % width >= static_cast<unsigned>(b) ? lane - static_cast<unsigned>(b) : lane;
    case 2:  // down: the upper delta lanes of the group keep their value
      return lane % width + static_cast<unsigned>(b) < width ? lane + static_cast<unsigned>(b) : lane;
    default: {  // xor: may read earlier groups; a later group returns its own value
      const unsigned j = lane ^ static_cast<unsigned>(b);
      return j / width > lane / width ? lane : j;
    }
  }
}

template <class T>
T value_of(unsigned tid) {
  return static_cast<T>(tid * 7 + 3) + (std::is_floating_point_v<T> ? static_cast<T>(0.5) : T{});
}

template <class T>
void check_shuffles(const Options& options) {
  const unsigned n = 64;  // two warps: lanes are per warp, not per block
  const std::vector<unsigned> widths{1, 2, 4, 8, 16, 32};
  const std::vector<int> bs{0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, -1, 37};
  std::vector<T> out(4 * widths.size() * bs.size() * n);
  launch(Dim3{1}, Dim3{n}, 0, options, [&](auto& ctx) {
    const unsigned tid = ctx.thread_idx().x;
    const T v = value_of<T>(tid);
    std::size_t k = 0;
    for (int op = 0; op < 4; ++op) {
      for (const unsigned w : widths) {
        for (const int b : bs) {
          // up/down/xor take a lane offset in [0, 32); idx any int (modulo).
          const int bb = op == 0 ? b : (b < 0 ? 0 : b % 32);
          const int wi = static_cast<int>(w);
          T r{};
          if (op == 0) r = ctx.shfl_sync(kFullMask, v, bb, wi);
          if (op == 1) r = ctx.shfl_up_sync(kFullMask, v, static_cast<unsigned>(bb), wi);
          if (op == 2) r = ctx.shfl_down_sync(kFullMask, v, static_cast<unsigned>(bb), wi);
          if (op == 3) r = ctx.shfl_xor_sync(kFullMask, v, bb, wi);
          out[k++ * n + tid] = r;
        }
      }
    }
  });
  std::size_t k = 0, mismatches = 0;
  for (int op = 0; op < 4; ++op) {
    for (const unsigned w : widths) {
      for (const int b : bs) {
        const int bb = op == 0 ? b : (b < 0 ? 0 : b % 32);
        for (unsigned tid = 0; tid < n; ++tid) {
          const unsigned src = tid / 32 * 32 + expected_source(op, tid % 32, bb, w);
          if (out[k * n + tid] != value_of<T>(src)) ++mismatches;
        }
        ++k;
      }
    }
  }
  CHECK_EQ(mismatches, std::size_t{0});
}
}  // namespace

TEST(shuffles_follow_cuda_semantics) {
  for (const auto& mode : all_modes()) {
    check_shuffles<int>(mode.options);
    check_shuffles<float>(mode.options);
    check_shuffles<double>(mode.options);
    check_shuffles<std::uint64_t>(mode.options);
  }
  // A few cases spelled out, in warp 1 (threads 32..63) so lanes != tids.
  std::vector<int> up(64), xr(64), down(64), idx(64), neg(64);
  launch(Dim3{1}, Dim3{64}, 0, Options{}, [&](auto& ctx) {
    const unsigned t = ctx.thread_idx().x;
    const int v = static_cast<int>(t);
    up[t] = ctx.shfl_up_sync(kFullMask, v, 3u, 8);
    xr[t] = ctx.shfl_xor_sync(kFullMask, v, 16, 16);
    down[t] = ctx.shfl_down_sync(kFullMask, v, 1u);
    idx[t] = ctx.shfl_sync(kFullMask, v, 37, 8);
    neg[t] = ctx.shfl_sync(kFullMask, v, -1);
  });
  CHECK_EQ(up[32 + 10], 32 + 10);  // lane 10 is lane 2 of its group of 8: < delta, keeps its own
  CHECK_EQ(up[32 + 13], 32 + 10);
  CHECK_EQ(xr[32 + 3], 32 + 3);    // lane 3 ^ 16 = 19 is in the next group of 16: its own value
  CHECK_EQ(xr[32 + 20], 32 + 4);   // lane 20 ^ 16 = 4 is in an earlier group: read
  CHECK_EQ(down[32 + 31], 32 + 31);  // no lane 32 to read: its own value
  CHECK_EQ(down[32 + 30], 32 + 31);
  CHECK_EQ(idx[32 + 3], 32 + 5);   // 37 mod 8 = 5, in lane 3's group (0..7)
  CHECK_EQ(idx[32 + 13], 32 + 13);  // group 8..15: lane 8 + 5
  CHECK_EQ(neg[32 + 0], 32 + 31);  // -1 mod 32 = 31
}

TEST(ballot_any_all) {
  for (const auto& mode : all_modes()) {
    // 48 threads: warp 1 has 16 lanes, so its mask is 0xffff.
    std::vector<unsigned> ballot(48);
    std::vector<int> any_none(48), any_one(48), all_all(48), all_but_one(48);
    launch(Dim3{1}, Dim3{48}, 0, mode.options, [&](auto& ctx) {
      const unsigned t = ctx.thread_idx().x, lane = ctx.lane();
      const unsigned mask = ctx.warp() == 0 ? kFullMask : 0xffffu;
      ballot[t] = ctx.ballot_sync(mask, ctx.warp() == 0 ? lane % 3 == 0 : lane == 5);
      any_none[t] = ctx.any_sync(mask, false);
      any_one[t] = ctx.any_sync(mask, lane == 9);
      all_all[t] = ctx.all_sync(mask, true);
      all_but_one[t] = ctx.all_sync(mask, lane != 11);
    });
    for (unsigned t = 0; t < 48; ++t) {
      CHECK_EQ(ballot[t], t < 32 ? 0x49249249u : 0x20u);
      CHECK_EQ(any_none[t], 0);
      CHECK_EQ(any_one[t], 1);
      CHECK_EQ(all_all[t], 1);
      CHECK_EQ(all_but_one[t], 0);
    }
  }
}

TEST(misuse_of_the_model_is_reported) {
  const auto run = [](unsigned threads, std::size_t smem, auto body, const Options& o = Options{}) {
    launch(Dim3{1}, Dim3{threads}, smem, o, body);
  };
  CHECK_THROWS(run(32, 0,
                   [](auto& ctx) {
                     if (ctx.lane() < 16) {
                       ctx.shfl_xor_sync(kFullMask, 1, 1);
                     } else {
                       ctx.ballot_sync(kFullMask, true);
                     }
                   }),
               "warp divergence");
  CHECK_THROWS(run(32, 0, [](auto& ctx) { ctx.shfl_xor_sync(0xffffu, 1, 1); }), "partial masks");
  CHECK_THROWS(run(32, 0, [](auto& ctx) { ctx.shfl_xor_sync(kFullMask, 1, 1, 3); }), "power of two");
  CHECK_THROWS(run(48, 0,
                   [](auto& ctx) {
                     ctx.shfl_sync(ctx.warp() == 0 ? kFullMask : 0xffffu, 1, 20);
                   }),
               "a lane the warp does not have");
  CHECK_THROWS(run(32, 0,
                   [](auto& ctx) {
                     if (ctx.lane() == 5) return;
                     ctx.shfl_xor_sync(kFullMask, 1, 1);
                   }),
               "returned");
  for (const auto& mode : all_modes()) {  // whichever of the two meets first
    CHECK_THROWS(run(64, 0,
                     [](auto& ctx) {
                       if (ctx.linear_tid() == 40) return;
                       ctx.sync();
                     },
                     mode.options),
                 "every thread of a block must reach every sync()");
  }
  CHECK_THROWS(run(32, 0,
                   [](auto& ctx) {
                     if (ctx.lane() == 0) {
                       ctx.sync();
                     } else {
                       ctx.shfl_xor_sync(kFullMask, 1, 1);
                     }
                   }),
               "deadlock");
  CHECK_THROWS(run(32, 16, [](auto& ctx) { ot_cuda::shared_array<float>(ctx)[4] = 1.0f; }), "out of bounds");
  CHECK_THROWS(run(32, 16, [](auto& ctx) { ot_cuda::shared_array<float>(ctx, 2)[0] = 1.0f; }), "misaligned");
  CHECK_THROWS(launch(Dim3{1}, Dim3{2048}, 0, Options{}, [](auto&) {}), "limits");
  // A body's own exception reaches the caller, from any worker, and the
  // abandoned fibers are unwound (the next launch works).
  Options two;
  two.workers = 2;
  CHECK_THROWS(launch(Dim3{8}, Dim3{64}, 0, two,
                      [](auto& ctx) {
                        ctx.sync();
                        if (ctx.block_idx().x == 5 && ctx.linear_tid() == 33) throw std::runtime_error("boom");
                        ctx.sync();
                      }),
               "boom");
  int ran = 0;
  launch(Dim3{1}, Dim3{1}, 0, Options{}, [&](auto&) { ++ran; });
  CHECK_EQ(ran, 1);
}

TEST(shared_memory_is_per_block) {
  const unsigned n = 64, blocks = 16;
  for (const auto& mode : all_modes()) {
    std::vector<int> first_read(blocks * n), neighbour(blocks * n);
    launch(Dim3{blocks}, Dim3{n}, n * sizeof(int), mode.options, [&](auto& ctx) {
      auto s = ot_cuda::shared_array<int>(ctx);
      const unsigned t = ctx.thread_idx().x, b = ctx.block_idx().x;
      first_read[b * n + t] = s[t];  // before any write in this block
      ctx.sync();
      s[t] = static_cast<int>(b * 1000 + t);
      ctx.sync();
      neighbour[b * n + t] = s[n - 1 - t];
    });
    for (unsigned b = 0; b < blocks; ++b) {
      for (unsigned t = 0; t < n; ++t) {
        // Each block starts from the fill (zeros, or 0xff bytes = -1), never
        // from the block that ran before it on the same worker.
        CHECK_EQ(first_read[b * n + t], mode.options.nan_fill ? -1 : 0);
        CHECK_EQ(neighbour[b * n + t], static_cast<int>(b * 1000 + (n - 1 - t)));
      }
    }
  }
}

TEST(atomics_across_blocks_and_threads) {
  for (const auto& mode : all_modes()) {
    for (const unsigned workers : {1u, 2u}) {
      Options o = mode.options;
      o.workers = workers;
      int count = 0;
      unsigned ucount = 0;
      float fsum = 0.0f;
      int from_shared = 0;
      launch(Dim3{64}, Dim3{128}, sizeof(int), o, [&](auto& ctx) {
        ctx.atomic_add(&count, 1);
        ctx.atomic_add(&ucount, 2u);
        ctx.atomic_add(&fsum, 0.5f);
        auto s = ot_cuda::shared_array<int>(ctx);
        if (ctx.linear_tid() == 0) s[0] = 0;
        ctx.sync();
        s.atomic_add(0, 1);  // atomics do not race with each other
        ctx.sync();
        if (ctx.linear_tid() == 0) ctx.atomic_add(&from_shared, static_cast<int>(s[0]));
      });
      CHECK_EQ(count, 64 * 128);
      CHECK_EQ(ucount, 2u * 64 * 128);
      CHECK_EQ(fsum, 0.5f * 64 * 128);  // exact: halves up to 2^24
      CHECK_EQ(from_shared, 64 * 128);
    }
  }
}

namespace {
// The order in which the threads of a block run through two intervals.
std::vector<int> tickets(const Options& o) {
  const unsigned n = 256;
  std::vector<int> out(2 * n);
  int ticket = 0;
  launch(Dim3{1}, Dim3{n}, 0, o, [&](auto& ctx) {
    const unsigned t = ctx.thread_idx().x;
    out[t] = ctx.atomic_add(&ticket, 1);
    ctx.sync();
    out[n + t] = ctx.atomic_add(&ticket, 1) - static_cast<int>(n);
  });
  return out;
}
}  // namespace

TEST(random_order_shuffles_threads_between_barriers) {
  std::vector<int> identity(256);
  std::iota(identity.begin(), identity.end(), 0);
  const auto plain = tickets(Options{});
  CHECK(std::vector<int>(plain.begin(), plain.begin() + 256) == identity);  // thread order
  CHECK(std::vector<int>(plain.begin() + 256, plain.end()) == identity);
  Options r1, r2;
  r1.random_order = r2.random_order = true;
  r1.seed = 1;
  r2.seed = 2;
  const auto a = tickets(r1), b = tickets(r2), a_again = tickets(r1);
  const std::vector<int> a0(a.begin(), a.begin() + 256), a1(a.begin() + 256, a.end());
  CHECK(a0 != identity);
  CHECK(a1 != identity);
  CHECK(a0 != a1);  // reshuffled after every barrier
  CHECK(std::is_permutation(a0.begin(), a0.end(), identity.begin()));
  CHECK(a == a_again);  // seeded: a failure can be replayed
  CHECK(a != b);
}

namespace {
// A block reduction with a classic bug: after the per-warp partials are
// published, every thread sums all 32 slots instead of one per warp. With
// 2 warps, slots 2..31 are never written.
float buggy_block_sum(const Options& o) {
  float result = 0.0f;
  launch(Dim3{1}, Dim3{64}, 32 * sizeof(float), o, [&](auto& ctx) {
    auto s = ot_cuda::shared_array<float>(ctx);
    const float v = ot_cuda::warp_sum(ctx, 1.0f);
    if (ctx.lane() == 0) s[ctx.warp()] = v;
    ctx.sync();
    const float total = ot_cuda::warp_sum(ctx, static_cast<float>(s[ctx.lane()]));  // bug: lanes >= 2
    if (ctx.linear_tid() == 0) result = total;
  });
  return result;
}
float correct_block_sum(const Options& o) {
  float result = 0.0f;
  launch(Dim3{1}, Dim3{64}, 32 * sizeof(float), o, [&](auto& ctx) {
    const float total = ot_cuda::block_sum(ctx, 1.0f, ot_cuda::shared_array<float>(ctx));
    if (ctx.linear_tid() == 0) result = total;
  });
  return result;
}
}  // namespace

TEST(nan_fill_exposes_uninitialised_shared_reads) {
  Options nan;
  nan.nan_fill = true;
  CHECK_EQ(buggy_block_sum(Options{}), 64.0f);    // zeros hide the bug...
  CHECK(std::isnan(buggy_block_sum(nan)));         // ...NaN exposes it
  CHECK_EQ(correct_block_sum(nan), 64.0f);
  for (const auto& mode : all_modes()) CHECK_EQ(correct_block_sum(mode.options), 64.0f);
}

TEST(race_check_catches_racy_kernels) {
  const unsigned n = 64;
  // Write-write: every thread stores to the same slot.
  const auto ww = [](auto& ctx) {
    ot_cuda::shared_array<int>(ctx)[0] = static_cast<int>(ctx.linear_tid());
  };
  // Missing barrier: write my slot, read my neighbour's.
  const auto raw = [](auto& ctx) {
    auto s = ot_cuda::shared_array<int>(ctx);
    const unsigned t = ctx.linear_tid();
    s[t] = static_cast<int>(t);
    [[maybe_unused]] const int x = s[(t + 1) % 64];
  };
  // Two block_sums without a sync() between: the second publication
  // overwrites partials other warps may still be reading.
  const auto war = [](auto& ctx) {
    auto s = ot_cuda::shared_array<float>(ctx);
    const float a = ot_cuda::block_sum(ctx, 1.0f, s);
    [[maybe_unused]] const float b = ot_cuda::block_sum(ctx, a, s);
  };
  // An atomic and a plain read of the same slot in one interval.
  const auto atomic_vs_read = [](auto& ctx) {
    auto s = ot_cuda::shared_array<int>(ctx);
    s.atomic_add(0, 1);
    [[maybe_unused]] const int x = s[0];
  };
  for (const auto& mode : all_modes()) {
    const Options o = with_race_check(mode.options);
    CHECK_THROWS(launch(Dim3{2}, Dim3{n}, n * 4, o, ww), "shared-memory race");
    CHECK_THROWS(launch(Dim3{2}, Dim3{n}, n * 4, o, raw), "shared-memory race");
    CHECK_THROWS(launch(Dim3{2}, Dim3{n}, n * 4, o, war), "shared-memory race");
    CHECK_THROWS(launch(Dim3{2}, Dim3{n}, n * 4, o, atomic_vs_read), "shared-memory race");
  }
  // The report names both threads and the interval.
  CHECK_THROWS(launch(Dim3{1}, Dim3{n}, n * 4, with_race_check(), ww),
               "thread (1,0,0) [warp 0 lane 1] writes byte 0 that thread (0,0,0) [warp 0 lane 0] wrote since the block "
               "started");
  CHECK_THROWS(launch(Dim3{1}, Dim3{n}, n * 4, with_race_check(),
                      [](auto& ctx) {
                        auto s = ot_cuda::shared_array<int>(ctx);
                        ctx.sync();
                        s[ctx.linear_tid() / 2] = 1;
                      }),
               "thread (1,0,0) [warp 0 lane 1] writes byte 0 that thread (0,0,0) [warp 0 lane 0] wrote since sync() #1");
  // Without the check the same kernels run (a GPU would not complain either).
  launch(Dim3{2}, Dim3{n}, n * 4, Options{}, ww);
  launch(Dim3{2}, Dim3{n}, n * 4, Options{}, raw);
  launch(Dim3{2}, Dim3{n}, n * 4, Options{}, war);

  // Correct kernels pass: the fixed ones, read-only sharing, atomics alone.
  const auto raw_fixed = [](auto& ctx) {
    auto s = ot_cuda::shared_array<int>(ctx);
    const unsigned t = ctx.linear_tid();
    s[t] = static_cast<int>(t);
    ctx.sync();
    [[maybe_unused]] const int x = s[(t + 1) % 64];
  };
  const auto war_fixed = [](auto& ctx) {
    auto s = ot_cuda::shared_array<float>(ctx);
    const float a = ot_cuda::block_sum(ctx, 1.0f, s);
    ctx.sync();
    [[maybe_unused]] const float b = ot_cuda::block_sum(ctx, a, s);
  };
  const auto readers = [](auto& ctx) {
    auto s = ot_cuda::shared_array<int>(ctx);
    if (ctx.linear_tid() == 3) s[0] = 7;
    ctx.sync();
    [[maybe_unused]] const int x = s[0];
    s.atomic_add(1, 1);
  };
  for (const auto& mode : all_modes()) {
    const Options o = with_race_check(mode.options);
    launch(Dim3{2}, Dim3{n}, n * 4, o, raw_fixed);
    launch(Dim3{2}, Dim3{n}, n * 4, o, war_fixed);
    launch(Dim3{2}, Dim3{n}, n * 4, o, readers);
  }
}
