// kernels/sample.cuh in the CPU execution, in every checking mode, against the
// CPU backend's own draw code (../../src/cpu/sample_draw.cc's draw_one and
// row_stats, linked in by CMakeLists.txt): the same uniforms
// must draw the same tokens, with logprobs within 1e-5. Rows with ties, -inf
// (masked tokens), a peaked row, and a row of all -inf; temperatures 0 … 2;
// top-k off, 1, small, ≥ vocab; top-p 1 … 0.05; min-p 0 … 0.5.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../kernels/sample.cuh"
#include "op_check.h"

#include "../../src/cpu/sample_draw.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Draws {
  std::vector<std::int32_t> row_of, top_k;
  std::vector<double> temperature, top_p, min_p, u;
};

// Rows: 0 random, 1 integer logits (many ties), 2 half masked (-inf) with ties,
// 3 one token far above the rest, 4 all -inf (only when `with_dead_row`).
std::vector<float> make_rows(int rows, int vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uf(-5.0f, 5.0f);
  std::uniform_int_distribution<int> ui(-3, 3);
  std::vector<float> x(static_cast<std::size_t>(rows) * vocab);
  for (int r = 0; r < rows; ++r) {
    float* row = x.data() + static_cast<std::size_t>(r) * vocab;
    for (int j = 0; j < vocab; ++j) {
      switch (r % 5) {
        case 0: row[j] = uf(rng); break;
        case 1: row[j] = static_cast<float>(ui(rng)); break;
        case 2: row[j] = (rng() % 2 == 0 && j != 0) ? -kInf : static_cast<float>(ui(rng)) * 0.5f; break;
        case 3: row[j] = j == vocab / 3 ? 12.0f : uf(rng) * 0.2f; break;
        default: row[j] = -kInf; break;
      }
    }
    if (r % 5 == 1 && vocab > 2) row[vocab - 1] = row[1] = 3.0f;  // the maximum tied
  }
  return x;
}

Draws make_draws(int m, int rows, int vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double temps[] = {0.0, 0.3, 0.7, 1.0, 1.0, 1.5, 2.0};
  const std::int32_t ks[] = {0, 0, 0, 1, 2, 5, 40, vocab, vocab + 3, -1};
  const double ps[] = {1.0, 1.0, 0.95, 0.9, 0.5, 0.05};
  const double mps[] = {0.0, 0.0, 0.0, 0.02, 0.1, 0.5, 1.0};
  const auto pick = [&](const auto& a) { return a[rng() % std::size(a)]; };
  std::uniform_real_distribution<double> uu(0.0, 1.0);
  Draws d;
  for (int i = 0; i < m; ++i) {
    d.row_of.push_back(static_cast<std::int32_t>(rng() % rows));
    d.temperature.push_back(pick(temps));
    d.top_k.push_back(pick(ks));
    d.top_p.push_back(pick(ps));
    d.min_p.push_back(pick(mps));
    d.u.push_back(i % 11 == 0 ? 0.0 : i % 13 == 0 ? std::nextafter(1.0, 0.0) : uu(rng));
  }
  return d;
}

void run(int rows, int vocab, int m, const emu::Mode& mode, std::uint64_t seed) {
  const std::string what = "sample " + std::to_string(m) + " draws over " + std::to_string(rows) + "x" +
                           std::to_string(vocab) + " in mode " + mode.name;
  const auto x = make_rows(rows, vocab, seed);
  const auto d = make_draws(m, rows, vocab, seed + 1);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(m), -7);
  std::vector<double> logprobs(static_cast<std::size_t>(m), std::numeric_limits<double>::quiet_NaN());
  const k::SampleArgs a{x.data(),     vocab,      d.row_of.data(), d.temperature.data(), d.top_k.data(),
                        d.top_p.data(), d.min_p.data(), d.u.data(), tokens.data(),        logprobs.data()};
  const int threads = k::sample_block_threads(vocab);
  emu::launch(ot_cuda::Dim3{static_cast<unsigned>(m)}, ot_cuda::Dim3{static_cast<unsigned>(threads)},
              k::sample_shared_bytes(threads), mode.options, [&](auto& ctx) { k::sample_f32(ctx, a); });

  ot_test::Worst lp;
  int mismatches = 0;
  std::string first;
  for (int i = 0; i < m; ++i) {
    const float* row = x.data() + static_cast<std::size_t>(d.row_of[i]) * vocab;
    const ot::RowStats s = ot::row_stats(row, vocab);
    const ot::Draw draw{d.temperature[i], d.top_k[i], d.top_p[i], d.min_p[i], d.u[i]};
    const std::int32_t token = ot::draw_one(row, vocab, s, draw);
    const double ref = static_cast<double>(row[token]) - static_cast<double>(s.lse1);
    if (tokens[i] != token) {
      if (mismatches++ == 0) {
        first = "draw " + std::to_string(i) + " (row " + std::to_string(d.row_of[i]) + ", T " +
                std::to_string(draw.temperature) + ", k " + std::to_string(draw.top_k) + ", p " +
                std::to_string(draw.top_p) + ", min-p " + std::to_string(draw.min_p) + ", u " +
                std::to_string(draw.u) + "): token " + std::to_string(tokens[i]) + ", the CPU backend's " +
                std::to_string(token);
      }
      continue;
    }
    if (std::isnan(ref) && std::isnan(logprobs[i])) continue;  // a row of -inf: NaN in both
    lp.add(logprobs[i], ref, std::abs(double(row[token])) + std::abs(double(s.lse1)), static_cast<std::size_t>(i));
  }
  if (mismatches != 0) {
    ot_test::fail(__FILE__, __LINE__, what + ": " + std::to_string(mismatches) + " tokens differ, first " + first);
  }
  EXPECT_WITHIN(lp, 1e-5, what + ": logprobs vs the CPU backend");
}

}  // namespace

TEST(sample_draws_the_cpu_backends_tokens_in_every_mode) {
  const auto modes = ot_test::op_modes();
  for (std::size_t mi = 0; mi < modes.size(); ++mi) {
    // The most draws in the first (plain) mode; fewer in the slower checking modes.
    const int m = mi == 0 ? 400 : 40;
    run(5, 1000, m, modes[mi], 100 + mi);
    run(3, 7, mi == 0 ? 100 : 20, modes[mi], 200 + mi);
    run(2, 1, 8, modes[mi], 300 + mi);
  }
  run(4, 3000, 30, modes[0], 400);  // > 2048 candidates: sample.cc's radix-select path for top-p
}

TEST(sample_block_shape) {
  CHECK_EQ(k::sample_block_threads(1), 32);
  CHECK_EQ(k::sample_block_threads(1000), 128);
  CHECK_EQ(k::sample_block_threads(152000), 256);
  CHECK_EQ(k::sample_shared_bytes(128), std::size_t{(32 + 128) * 8});
}
