// ctx.mma_m16n8k16_bf16_f32 in the CPU execution against PTX's fragment layout
// for mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"). The layout is written
// out here register by register from that table, independently of the
// emulator's formulas, and fed matrices whose every element is distinct, so a
// single misplaced (row, col) in A, B, C or D fails a check.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../include/ot_cuda/ctx.h"
#include "check.h"

using ot_cuda::Dim3;
using ot_cuda::kFullMask;
using ot_cuda::emu::launch;

namespace {

struct Mats {
  float a[16][16], b[16][8], c[16][8];
};

std::uint32_t bf16_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0xffffu) != 0) throw std::logic_error("test value not exact in bf16");
  return u >> 16;
}
std::uint32_t pack(float lo, float hi) { return bf16_bits(lo) | (bf16_bits(hi) << 16); }

// One lane's fragments, straight from the PTX table (g = groupID, t =
// threadID_in_group).
struct Frag {
  std::uint32_t a[4], b[2];
  float c[4];
};
Frag fragments(const Mats& m, unsigned lane) {
  const unsigned g = lane / 4, t = lane % 4;
  Frag f{};
  f.a[0] = pack(m.a[g][2 * t], m.a[g][2 * t + 1]);                  // a0, a1
  f.a[1] = pack(m.a[g + 8][2 * t], m.a[g + 8][2 * t + 1]);          // a2, a3
  f.a[2] = pack(m.a[g][2 * t + 8], m.a[g][2 * t + 9]);              // a4, a5
  f.a[3] = pack(m.a[g + 8][2 * t + 8], m.a[g + 8][2 * t + 9]);      // a6, a7
  f.b[0] = pack(m.b[2 * t][g], m.b[2 * t + 1][g]);                  // b0, b1
  f.b[1] = pack(m.b[2 * t + 8][g], m.b[2 * t + 9][g]);              // b2, b3
  f.c[0] = m.c[g][2 * t];
  f.c[1] = m.c[g][2 * t + 1];
  f.c[2] = m.c[g + 8][2 * t];
  f.c[3] = m.c[g + 8][2 * t + 1];
  return f;
}
// Where D register i of a lane belongs.
void d_coord(unsigned lane, unsigned i, unsigned& row, unsigned& col) {
  row = lane / 4 + (i >= 2 ? 8 : 0);
  col = 2 * (lane % 4) + (i % 2);
}

// Runs one mma per warp over `warps` warps (warp w uses mats[w]) in `options`;
// returns d[warp][lane][i].
std::vector<float> run_mma(const std::vector<Mats>& mats, const ot_cuda::emu::Options& options) {
  const unsigned warps = static_cast<unsigned>(mats.size());
  std::vector<float> d(warps * 32 * 4, std::nanf(""));
  launch(Dim3{1}, Dim3{32 * warps}, 0, options, [&](auto& ctx) {
    const Frag f = fragments(mats[ctx.warp()], ctx.lane());
    float out[4];
    ctx.mma_m16n8k16_bf16_f32(out, f.a, f.b, f.c);
    for (unsigned i = 0; i < 4; ++i) d[(ctx.warp() * 32 + ctx.lane()) * 4 + i] = out[i];
  });
  return d;
}

// The emulator's documented arithmetic: C plus the exact products, added in
// f32 in k order.
float expected(const Mats& m, unsigned row, unsigned col) {
  float acc = m.c[row][col];
  for (unsigned k = 0; k < 16; ++k) acc += m.a[row][k] * m.b[k][col];
  return acc;
}

void check_all(const std::vector<Mats>& mats, const std::vector<float>& d, const std::string& what) {
  for (unsigned w = 0; w < mats.size(); ++w) {
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned i = 0; i < 4; ++i) {
        unsigned row, col;
        d_coord(lane, i, row, col);
        const float want = expected(mats[w], row, col), got = d[(w * 32 + lane) * 4 + i];
        if (!(got == want)) {
          ot_test::fail(__FILE__, __LINE__,
                        what + ": warp " + std::to_string(w) + " lane " + std::to_string(lane) + " d[" +
                            std::to_string(i) + "] (D[" + std::to_string(row) + "][" + std::to_string(col) +
                            "]) = " + std::to_string(got) + ", want " + std::to_string(want));
        }
      }
    }
  }
}

std::vector<ot_cuda::emu::Mode> modes() {
  auto m = ot_cuda::emu::checking_modes(5);
  m.push_back({"all-checks seed 9", ot_cuda::emu::checking_modes(9)[4].options});
  return m;
}

}  // namespace

TEST(mma_layout_of_a_and_c) {
  // A: 256 distinct integers (exact in bf16); B selects column 8r + j of A
  // into column j of D; C: distinct multiples of 1024, so each D element
  // names both the A and the C element it came from.
  for (unsigned r = 0; r < 2; ++r) {
    Mats m{};
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned k = 0; k < 16; ++k) m.a[i][k] = static_cast<float>(i * 16 + k + 1);
    for (unsigned k = 0; k < 16; ++k)
      for (unsigned j = 0; j < 8; ++j) m.b[k][j] = k == 8 * r + j ? 1.0f : 0.0f;
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned j = 0; j < 8; ++j) m.c[i][j] = 1024.0f * static_cast<float>(i * 8 + j + 1);
    for (const auto& mode : modes()) {
      const auto d = run_mma({m}, mode.options);
      check_all({m}, d, "A/C layout, columns " + std::to_string(8 * r) + ".., mode " + mode.name);
      // Spelled out, independently of expected(): D[i][j] = A[i][8r + j] + C[i][j].
      for (unsigned lane = 0; lane < 32; ++lane) {
        for (unsigned i = 0; i < 4; ++i) {
          unsigned row, col;
          d_coord(lane, i, row, col);
          CHECK_EQ(d[lane * 4 + i], m.a[row][8 * r + col] + m.c[row][col]);
        }
      }
    }
  }
}

TEST(mma_layout_of_b) {
  // A = a permutation matrix (row i picks k = (5i + 3) % 16), B: 128 distinct
  // integers: D[i][j] = B[(5i + 3) % 16][j], every element of B seen once.
  Mats m{};
  for (unsigned i = 0; i < 16; ++i) m.a[i][(5 * i + 3) % 16] = 1.0f;
  for (unsigned k = 0; k < 16; ++k)
    for (unsigned j = 0; j < 8; ++j) m.b[k][j] = static_cast<float>(k * 8 + j + 1);
  for (const auto& mode : modes()) {
    const auto d = run_mma({m}, mode.options);
    check_all({m}, d, "B layout, mode " + mode.name);
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned i = 0; i < 4; ++i) {
        unsigned row, col;
        d_coord(lane, i, row, col);
        CHECK_EQ(d[lane * 4 + i], m.b[(5 * row + 3) % 16][col]);
      }
    }
  }
}

TEST(mma_random_values_each_warp_its_own) {
  // Random bf16 values in three warps of one block, each with its own
  // matrices: bit-exact against C + exact products summed in f32 in k order,
  // and within f32 accumulation error of a float64 product.
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  auto bf = [&] {
    float v = u(rng);
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits &= 0xffff0000u;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  };
  std::vector<Mats> mats(3);
  for (auto& m : mats) {
    for (auto& row : m.a)
      for (auto& v : row) v = bf();
    for (auto& row : m.b)
      for (auto& v : row) v = bf();
    for (auto& row : m.c)
      for (auto& v : row) v = u(rng);
  }
  for (const auto& mode : modes()) {
    const auto d = run_mma(mats, mode.options);
    check_all(mats, d, "random, mode " + mode.name);
    for (unsigned w = 0; w < 3; ++w) {
      for (unsigned lane = 0; lane < 32; ++lane) {
        for (unsigned i = 0; i < 4; ++i) {
          unsigned row, col;
          d_coord(lane, i, row, col);
          double ref = mats[w].c[row][col], mag = std::abs(ref);
          for (unsigned k = 0; k < 16; ++k) {
            ref += double(mats[w].a[row][k]) * mats[w].b[k][col];
            mag += std::abs(double(mats[w].a[row][k]) * mats[w].b[k][col]);
          }
          CHECK(std::abs(d[(w * 32 + lane) * 4 + i] - ref) <= 17 * std::ldexp(1.0, -24) * mag);
        }
      }
    }
  }
}

TEST(mma_misuse_is_reported) {
  // A partial warp cannot run mma.sync.
  CHECK_THROWS(launch(Dim3{1}, Dim3{48}, 0, {},
                      [&](auto& ctx) {
                        float d[4];
                        const std::uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
                        const float c[4] = {0, 0, 0, 0};
                        ctx.mma_m16n8k16_bf16_f32(d, a, b, c);
                      }),
               "mma.sync needs all 32 lanes");
  // Lanes of one warp in different warp operations.
  CHECK_THROWS(launch(Dim3{1}, Dim3{32}, 0, {},
                      [&](auto& ctx) {
                        if (ctx.lane() == 7) {
                          (void)ctx.shfl_sync(kFullMask, 1.0f, 0);
                        } else {
                          float d[4];
                          const std::uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
                          const float c[4] = {0, 0, 0, 0};
                          ctx.mma_m16n8k16_bf16_f32(d, a, b, c);
                        }
                      }),
               "warp divergence");
  // A lane that returns while the others wait in the mma.
  CHECK_THROWS(launch(Dim3{1}, Dim3{32}, 0, {},
                      [&](auto& ctx) {
                        if (ctx.lane() == 3) return;
                        float d[4];
                        const std::uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
                        const float c[4] = {0, 0, 0, 0};
                        ctx.mma_m16n8k16_bf16_f32(d, a, b, c);
                      }),
               "mma_m16n8k16_bf16_f32");
}
