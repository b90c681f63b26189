// kernels/attention.cuh in the CPU execution, in every checking mode:
// cache_write (bit-exact against the CPU backend's, ../../src/cpu/attention.cc)
// and paged_attention against a float64 reference and the CPU backend, <= 1e-5
// per element relative to max(|ref|, Σ_t p_t·|v_t|) (the output is a weighted
// mean of values of both signs, which can cancel).
//
// The batch: three sequences (lengths 37, 7 and 70: more than one 32-key tile)
// with non-contiguous block tables, the first block shared by sequences 0 and 1
// (a prefix: its slots are written once, sequence 1's tokens there have slot
// -1), decode rows, an earlier-position row, a prefill chunk of sequence 2
// crossing tile and block boundaries; padding tokens (slot -1) in the write.
// Unwritten cache slots are NaN, so a read of a wrong slot fails the check.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../../src/cpu/attention.h"
#include "../kernels/attention.cuh"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
using ot_cuda::Dim3;

struct Case {
  const char* name;
  int num_heads, num_kv_heads, head_dim, block_size;
  std::vector<int> lengths;                    // per sequence
  std::vector<std::vector<int>> tables;        // per sequence: physical blocks
  int num_blocks;
  std::vector<int> shared_prefix_blocks;       // per sequence: leading blocks written by an earlier sequence
  std::vector<std::pair<int, int>> rows;       // (sequence, position)
};

struct Batch {
  int max_blocks = 0, n_tokens = 0;
  std::vector<std::int32_t> tables, slots, row_seq, row_pos;
  std::vector<float> k, v, q;
};

Batch make_batch(const Case& c, std::uint64_t seed) {
  Batch b;
  for (const auto& t : c.tables) b.max_blocks = std::max(b.max_blocks, static_cast<int>(t.size()));
  b.tables.assign(c.tables.size() * b.max_blocks, -1);
  for (std::size_t s = 0; s < c.tables.size(); ++s) {
    for (std::size_t i = 0; i < c.tables[s].size(); ++i) b.tables[s * b.max_blocks + i] = c.tables[s][i];
  }
  // Every sequence's tokens, in order, with a padding token after each sequence.
  for (std::size_t s = 0; s < c.lengths.size(); ++s) {
    for (int p = 0; p < c.lengths[s]; ++p) {
      const int blk = p / c.block_size;
      const bool shared = blk < c.shared_prefix_blocks[s];
      b.slots.push_back(shared ? -1 : c.tables[s][blk] * c.block_size + p % c.block_size);
    }
    b.slots.push_back(-1);
  }
  b.n_tokens = static_cast<int>(b.slots.size());
  const std::size_t row = static_cast<std::size_t>(c.num_kv_heads) * c.head_dim;
  b.k = ot_test::random_floats(b.n_tokens * row, -1.0f, 1.0f, seed);
  b.v = ot_test::random_floats(b.n_tokens * row, -1.0f, 1.0f, seed + 1);
  for (const auto& [s, p] : c.rows) {
    b.row_seq.push_back(s);
    b.row_pos.push_back(p);
  }
  b.q = ot_test::random_floats(c.rows.size() * c.num_heads * c.head_dim, -1.0f, 1.0f, seed + 2);
  return b;
}

std::size_t cache_floats(const Case& c) {
  return static_cast<std::size_t>(c.num_blocks) * c.block_size * c.num_kv_heads * c.head_dim;
}

float scale_of(const Case& c) { return 1.0f / std::sqrt(static_cast<float>(c.head_dim)); }

// The definition in double, reading the cache the CPU backend wrote; mag is
// max(|out|, Σ_t p_t |v_t| / Σ_t p_t).
void reference(const Case& c, const Batch& b, const std::vector<float>& kc, const std::vector<float>& vc,
               std::vector<double>& out, std::vector<double>& mag) {
  const int d = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const std::size_t n_rows = c.rows.size();
  out.assign(n_rows * c.num_heads * d, 0.0);
  mag.assign(out.size(), 0.0);
  for (std::size_t i = 0; i < n_rows; ++i) {
    const int s = b.row_seq[i], pos = b.row_pos[i];
    for (int h = 0; h < c.num_heads; ++h) {
      const int g = h / group;
      const float* q = b.q.data() + (i * c.num_heads + h) * d;
      std::vector<double> sc(pos + 1);
      std::vector<std::size_t> at(pos + 1);
      double mx = -INFINITY;
      for (int t = 0; t <= pos; ++t) {
        const std::size_t blk = static_cast<std::size_t>(b.tables[s * b.max_blocks + t / c.block_size]);
        const std::size_t slot = blk * c.block_size + t % c.block_size;
        at[t] = (slot * c.num_kv_heads + g) * d;
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += double(q[e]) * kc[at[t] + e];
        sc[t] = double(scale_of(c)) * dot;
        mx = std::max(mx, sc[t]);
      }
      double sum = 0;
      for (auto& x : sc) sum += (x = std::exp(x - mx));
      for (int e = 0; e < d; ++e) {
        double o = 0, m = 0;
        for (int t = 0; t <= pos; ++t) {
          o += sc[t] * vc[at[t] + e];
          m += sc[t] * std::abs(double(vc[at[t] + e]));
        }
        out[(i * c.num_heads + h) * d + e] = o / sum;
        mag[(i * c.num_heads + h) * d + e] = m / sum;
      }
    }
  }
}

struct CpuResult {
  std::vector<float> kc, vc, out;
};

CpuResult cpu_backend(const Case& c, const Batch& b) {
  CpuResult r{std::vector<float>(cache_floats(c), NAN), std::vector<float>(cache_floats(c), NAN),
              ot_test::nan_floats(b.q.size())};
  const ot::PagedKvCache cache{r.kc.data(), r.vc.data(), c.num_blocks, c.block_size, c.num_kv_heads, c.head_dim};
  ot::cache_write(cache, b.k.data(), b.v.data(), b.n_tokens, b.slots.data());
  const ot::AttentionHeads heads{c.num_heads, c.num_kv_heads, c.head_dim, scale_of(c)};
  const ot::PagedRows rows{static_cast<std::int64_t>(c.rows.size()), b.row_seq.data(), b.row_pos.data(),
                           b.tables.data(), b.max_blocks};
  ot::paged_attention(heads, rows, cache, b.q.data(), r.out.data());
  return r;
}

// The two launches in the CPU execution, as attention.cu's launchers shape them.
CpuResult run_kernels(const Case& c, const Batch& b, const ot_cuda::emu::Options& options) {
  namespace emu = ot_cuda::emu;
  CpuResult r{std::vector<float>(cache_floats(c), NAN), std::vector<float>(cache_floats(c), NAN),
              ot_test::nan_floats(b.q.size())};
  const int row_floats = c.num_kv_heads * c.head_dim;
  const Dim3 write_block{static_cast<unsigned>(k::cache_write_block_threads(row_floats))};
  emu::launch(Dim3{static_cast<unsigned>(b.n_tokens)}, write_block, 0, options, [&](auto& ctx) {
                k::cache_write(ctx, b.k.data(), b.v.data(), b.slots.data(), r.kc.data(), r.vc.data(),
                               static_cast<std::int64_t>(c.num_blocks) * c.block_size, row_floats);
              });
  const k::PagedAttentionParams p{b.q.data(),      r.out.data(),  b.row_seq.data(), b.row_pos.data(),
                                  b.tables.data(), b.max_blocks,  r.kc.data(),      r.vc.data(),
                                  c.block_size,    c.num_heads,   c.num_kv_heads,   c.head_dim,
                                  scale_of(c)};
  const int group = c.num_heads / c.num_kv_heads;
  emu::launch(Dim3{static_cast<unsigned>(c.rows.size()), static_cast<unsigned>(c.num_kv_heads)}, Dim3{k::kAttnThreads},
              k::paged_attention_shared_bytes(group, c.head_dim), options,
              [&](auto& ctx) { k::paged_attention(ctx, p); });
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  }
  return true;
}

ot_test::Worst worst(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& mag) {
  ot_test::Worst w;
  if (got.size() != want.size()) {
    w.err = INFINITY;
    return w;
  }
  for (std::size_t i = 0; i < got.size(); ++i) w.add(got[i], want[i], mag[i], i);
  return w;
}

Case mixed_case(int head_dim, int num_heads, int num_kv_heads) {
  // Blocks of 4: seq 0 (37 tokens, 10 blocks), seq 1 (7 tokens, 2 blocks, the
  // first shared with seq 0), seq 2 (70 tokens, 18 blocks); 32 physical blocks,
  // tables scattered and not in order.
  Case c{"", num_heads, num_kv_heads, head_dim, 4, {37, 7, 70}, {}, 32, {0, 1, 0}, {}};
  c.tables.push_back({5, 2, 9, 30, 14, 1, 22, 17, 8, 26});
  c.tables.push_back({5, 11});
  c.tables.push_back({3, 31, 0, 12, 25, 7, 19, 4, 28, 13, 21, 6, 16, 29, 10, 23, 18, 27});
  // Decode rows of seq 0 and 1, a row of seq 1 inside the shared block, a
  // prefill chunk of seq 2 (positions 58..69: crosses a tile at 64 and blocks).
  c.rows = {{0, 36}, {1, 6}, {1, 3}};
  for (int p = 58; p < 70; ++p) c.rows.push_back({2, p});
  c.rows.push_back({2, 0});  // a lone first-position row (one key)
  return c;
}

void check_case(const Case& c, const std::vector<ot_cuda::emu::Mode>& modes) {
  const Batch b = make_batch(c, 4242 + static_cast<std::uint64_t>(c.head_dim));
  const CpuResult cpu = cpu_backend(c, b);
  std::vector<double> want, mag;
  reference(c, b, cpu.kc, cpu.vc, want, mag);
  const std::string name = std::string(c.name) + " (heads " + std::to_string(c.num_heads) + "/" +
                           std::to_string(c.num_kv_heads) + ", head_dim " + std::to_string(c.head_dim) + ")";
  EXPECT_WITHIN(worst(cpu.out, want, mag), 1e-5, "cpu backend " + name + " vs float64");
  for (const auto& mode : modes) {
    const CpuResult got = run_kernels(c, b, mode.options);
    CHECK(same_bits(got.kc, cpu.kc));
    CHECK(same_bits(got.vc, cpu.vc));
    EXPECT_WITHIN(worst(got.out, want, mag), 1e-5, "paged_attention " + name + " in mode " + mode.name + " vs float64");
    std::vector<double> cpu_out(cpu.out.begin(), cpu.out.end());
    EXPECT_WITHIN(worst(got.out, cpu_out, mag), 1e-5,
                  "paged_attention " + name + " in mode " + mode.name + " vs cpu backend");
  }
}

}  // namespace

TEST(attention_launch_shapes) {
  CHECK(k::paged_attention_supports(4, 2, 16));
  CHECK(k::paged_attention_supports(32, 4, 128));
  CHECK(!k::paged_attention_supports(4, 3, 16));                    // group not whole
  CHECK(!k::paged_attention_supports(k::kAttnMaxGroup * 2, 1, 64));  // group too large
  CHECK(!k::paged_attention_supports(4, 2, k::kAttnMaxHeadDim + 1));
  // The largest shape fits the default 48 KiB of dynamic shared memory.
  CHECK(k::paged_attention_shared_bytes(k::kAttnMaxGroup, k::kAttnMaxHeadDim) <= 48u * 1024u);
  CHECK_EQ(k::cache_write_block_threads(1), 32);
  CHECK_EQ(k::cache_write_block_threads(2 * 16), 32);
  CHECK_EQ(k::cache_write_block_threads(8 * 128), k::kCacheWriteMaxThreads);
}

TEST(attention_cache_write_and_paged_attention_in_every_mode) {
  const auto modes = ot_test::op_modes();
  for (const int d : {16, 32}) {
    Case c = mixed_case(d, 4, 2);
    c.name = "mixed batch";
    check_case(c, modes);
  }
  // The widest group (kAttnMaxGroup heads per kv head: both of a warp's heads)
  // and plain multi-head attention, in the all-checks mode.
  const std::vector<ot_cuda::emu::Mode> all{ot_cuda::emu::checking_modes(21)[4]};
  Case wide = mixed_case(16, k::kAttnMaxGroup, 1);
  wide.name = "widest group";
  check_case(wide, all);
  Case mha = mixed_case(16, 2, 2);
  mha.name = "multi-head";
  check_case(mha, all);
}

TEST(attention_large_shape) {
  const char* large = std::getenv("OT_CUDA_EMU_LARGE");
  if (large == nullptr || large[0] != '1') return;
  Case c = mixed_case(k::kAttnMaxHeadDim, 16, 2);
  c.name = "large";
  check_case(c, {ot_cuda::emu::checking_modes(5)[4]});
}
