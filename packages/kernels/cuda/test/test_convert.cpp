// kernels/convert.cuh in the CPU execution, in every checking mode, bit for
// bit: f32 -> bf16 against test/bf16.h's to_bf16 for every non-NaN (round to
// nearest even) and the engine's floatBitsToBfloat16 for NaN (top half, quiet
// bit set: ../../engine/src/model/float-convert.ts), plus hand-worked values
// (signed zeros, infinities, NaNs, subnormals, ties either way, overflow to
// infinity); bf16 -> f32 over all 65536 patterns against ../src/cpu/
// gemm_bf16.cc's widening (h << 16). Spans start at aligned and unaligned
// offsets (the 4-element pack path and the scalar one) inside guard elements
// that must stay untouched, on grids smaller than the work (grid-stride) and
// through the launchers on the emulated device.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../include/ot_cuda/launch.h"
#include "../kernels/convert.cuh"
#include "../kernels/launchers.h"
#include "bf16.h"
#include "check.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;

constexpr std::uint16_t kGuard16 = 0xdead;
constexpr std::uint32_t kGuard32 = 0x7fcadbad;  // a quiet NaN no widened bf16 is (low half nonzero)

bool large() {
  const char* v = std::getenv("OT_CUDA_EMU_LARGE");
  return v != nullptr && v[0] == '1';
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The CPU side's conversion: to_bf16 (no NaN in its data), and for NaN the
// engine's floatBitsToBfloat16.
std::uint16_t want_bf16(std::uint32_t u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) != 0) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return ot_test::to_bf16(from_bits(u));
}

// Hand-worked conversions, each with its negation (the sign bit rides along).
struct Worked {
  std::uint32_t f32;
  std::uint16_t bf16;
};
const std::vector<Worked>& worked() {
  static const std::vector<Worked> v = [] {
    std::vector<Worked> w{
        {0x00000000u, 0x0000},  // +0
        {0x7f800000u, 0x7f80},  // inf
        {0x7fc00000u, 0x7fc0},  // quiet NaN
        {0x7f800001u, 0x7fc0},  // signalling NaN, payload in the dropped half: quieted, still NaN
        {0x7fa00000u, 0x7fe0},  // signalling NaN with a kept payload bit
        {0x7fffffffu, 0x7fff},  // NaN that rounding would carry into the sign
        {0x7f812345u, 0x7fc1}, {0x3f800000u, 0x3f80},  // 1
        {0x3f808000u, 0x3f80},                         // 1 + 2^-8: a tie, kept part even: down
        {0x3f818000u, 0x3f82},                         // a tie, kept part odd: up
        {0x3f807fffu, 0x3f80},                         // just below the tie
        {0x3f808001u, 0x3f81},                         // just above the tie
        {0x3fff8000u, 0x4000},                         // a tie carrying into the exponent
        {0x7f7f7fffu, 0x7f7f},                         // below the largest bf16's rounding boundary
        {0x7f7f8000u, 0x7f80},                         // the largest bf16 (odd) + half an ulp: to infinity
        {0x7f7fffffu, 0x7f80},                         // FLT_MAX rounds to infinity
        {0x00800000u, 0x0080},                         // FLT_MIN
        {0x00000001u, 0x0000},                         // the smallest subnormal: to zero
        {0x00008000u, 0x0000},                         // subnormal tie, kept part 0 (even): down
        {0x00018000u, 0x0002},                         // subnormal tie, kept part odd: up
        {0x00010000u, 0x0001},                         // the smallest bf16 subnormal
        {0x007fffffu, 0x0080},                         // the largest subnormal rounds up to FLT_MIN
        {0x00408000u, 0x0040},                         // subnormal tie, even
    };
    const std::size_t n = w.size();
    for (std::size_t i = 0; i < n; ++i)
      w.push_back({w[i].f32 | 0x80000000u, static_cast<std::uint16_t>(w[i].bf16 | 0x8000)});
    return w;
  }();
  return v;
}

// The f32 inputs of the mode sweep: the worked values, then bit patterns
// spread over the whole space (a multiplicative hash of i), then ties and
// their neighbours at random exponents.
std::vector<std::uint32_t> sweep_inputs(std::size_t spread) {
  std::vector<std::uint32_t> v;
  for (const auto& w : worked()) v.push_back(w.f32);
  for (std::uint32_t i = 0; i < spread; ++i) v.push_back(i * 0x9e3779b1u);
  for (std::uint32_t i = 0; i < spread / 8; ++i) {
    const std::uint32_t hi = (i * 0x85ebca6bu) & 0xffff0000u;
    for (std::uint32_t lo : {0x7fffu, 0x8000u, 0x8001u}) v.push_back(hi | lo);
  }
  return v;
}

// Runs body(ctx, x, y, count) over x[offset, offset + count) into y[offset,
// ...) with a guard either side of y; the blocks given, or the launch shape.
template <class In, class Out, class Body>
std::vector<Out> run(const std::vector<In>& inputs, std::size_t offset, Out guard, unsigned blocks,
                     const emu::Options& options, Body body) {
  std::vector<In> x(offset, In{});
  x.insert(x.end(), inputs.begin(), inputs.end());
  std::vector<Out> y(offset + inputs.size() + 1, guard);
  const auto count = static_cast<std::int64_t>(inputs.size());
  emu::launch(ot_cuda::Dim3{blocks == 0 ? k::convert_blocks(count) : blocks},
              ot_cuda::Dim3{static_cast<unsigned>(k::kElementwiseThreads)}, 0, options,
              [&](auto& ctx) { body(ctx, x.data() + offset, y.data() + offset, count); });
  return y;
}

std::uint32_t bits(std::uint16_t v) { return v; }
std::uint32_t bits(float v) { return bits_of(v); }

std::string hex(std::uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v % 16]);
    v /= 16;
  } while (v != 0);
  return "0x" + s;
}

// y holds the bits want at [offset, offset + want.size()) and the guard's elsewhere.
template <class T, class W>
void expect_bits(const std::vector<T>& y, const std::vector<W>& want, std::size_t offset, T guard,
                 const std::string& what, int line) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    const bool inside = i >= offset && i < offset + want.size();
    const std::uint32_t w = inside ? std::uint32_t{want[i - offset]} : bits(guard);
    if (bits(y[i]) != w) {
      ot_test::fail(__FILE__, line,
                    what + ": element " + std::to_string(i) + " is " + hex(bits(y[i])) + ", want " + hex(w) +
                        (inside ? "" : " (a guard)"));
      return;
    }
  }
}

}  // namespace

TEST(convert_f32_to_bf16_worked_values) {
  // The hand-worked table against the reference the kernels are checked with,
  // and against the single-element conversion itself.
  for (const auto& w : worked()) {
    CHECK_EQ(want_bf16(w.f32), w.bf16);
    CHECK_EQ(k::bf16_from_f32_rne(from_bits(w.f32)), w.bf16);
  }
}

TEST(convert_f32_to_bf16_bit_exact_in_every_mode) {
  const auto inputs = sweep_inputs(large() ? (1u << 22) : (1u << 14));
  std::vector<std::uint16_t> want;
  for (std::uint32_t u : inputs) want.push_back(want_bf16(u));
  std::vector<float> xf;
  for (std::uint32_t u : inputs) xf.push_back(from_bits(u));
  auto body = [](auto& ctx, const float* x, std::uint16_t* y, std::int64_t n) { k::convert_f32_to_bf16(ctx, x, y, n); };
  for (const auto& mode : ot_test::op_modes(21, 23)) {
    for (std::size_t offset : {0, 1, 2, 3, 4}) {
      // The launch shape, and 3 blocks striding over the whole span.
      for (unsigned blocks : {0u, 3u}) {
        const auto y = run(xf, offset, kGuard16, blocks, mode.options, body);
        expect_bits(y, want, offset, kGuard16,
                    "offset " + std::to_string(offset) + " blocks " + std::to_string(blocks) + " mode " + mode.name,
                    __LINE__);
      }
    }
  }
}

TEST(convert_bf16_to_f32_all_patterns_in_every_mode) {
  // Every bf16 pattern widens to the float with those top bits (NaN payloads
  // and signalling NaNs included, as gemm_bf16.cc's bf16_to_f32), and rounds
  // back to itself (a NaN to itself with the quiet bit set).
  std::vector<std::uint16_t> all(65536);
  for (std::uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<std::uint16_t>(h);
  std::vector<std::uint32_t> want(all.size());
  for (std::uint32_t h = 0; h < 65536; ++h) {
    want[h] = h << 16;
    const bool nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    CHECK_EQ(k::bf16_from_f32_rne(k::f32_from_bf16(static_cast<std::uint16_t>(h))), nan ? (h | 0x40u) : h);
    if (!nan) CHECK_EQ(double(k::f32_from_bf16(static_cast<std::uint16_t>(h))), ot_test::from_bf16(all[h]));
  }
  auto body = [](auto& ctx, const std::uint16_t* x, float* y, std::int64_t n) { k::convert_bf16_to_f32(ctx, x, y, n); };
  for (const auto& mode : ot_test::op_modes(25, 27)) {
    for (std::size_t offset : {0, 1, 2, 3, 4}) {
      for (unsigned blocks : {0u, 3u}) {
        const auto y = run(all, offset, from_bits(kGuard32), blocks, mode.options, body);
        expect_bits(y, want, offset, from_bits(kGuard32),
                    "offset " + std::to_string(offset) + " blocks " + std::to_string(blocks) + " mode " + mode.name,
                    __LINE__);
      }
    }
  }
}

TEST(convert_short_spans) {
  // Counts around the 4-element pack: none, one, a partial pack, a pack and a
  // tail, at every alignment; each element converts to what the reference says.
  const auto options = ot_test::op_modes().back().options;
  auto to_bf16 = [](auto& ctx, const float* x, std::uint16_t* y, std::int64_t n) {
    k::convert_f32_to_bf16(ctx, x, y, n);
  };
  auto to_f32 = [](auto& ctx, const std::uint16_t* x, float* y, std::int64_t n) {
    k::convert_bf16_to_f32(ctx, x, y, n);
  };
  for (std::size_t count : {0, 1, 3, 4, 5, 7, 8, 9}) {
    for (std::size_t offset : {0, 1, 2, 3}) {
      std::vector<float> xf;
      std::vector<std::uint16_t> want16, xh;
      std::vector<std::uint32_t> want32;
      for (std::size_t i = 0; i < count; ++i) {
        const Worked& w = worked()[(i * 7 + offset) % worked().size()];
        xf.push_back(from_bits(w.f32));
        want16.push_back(w.bf16);
        xh.push_back(w.bf16);
        want32.push_back(std::uint32_t{w.bf16} << 16);
      }
      const std::string what = "count " + std::to_string(count) + " offset " + std::to_string(offset);
      expect_bits(run(xf, offset, kGuard16, 0, options, to_bf16), want16, offset, kGuard16, what, __LINE__);
      expect_bits(run(xh, offset, from_bits(kGuard32), 0, options, to_f32), want32, offset, from_bits(kGuard32), what,
                  __LINE__);
    }
  }
}

TEST(convert_launchers_match_and_validate) {
  // Through convert.cu on the emulated device (its launch shape), unaligned
  // too; a negative count is invalid, zero launches nothing.
  const auto inputs = sweep_inputs(5000);
  for (std::size_t offset : {0, 1}) {
    std::vector<float> x(offset);
    std::vector<std::uint16_t> want(offset, kGuard16);
    for (std::uint32_t u : inputs) {
      x.push_back(from_bits(u));
      want.push_back(want_bf16(u));
    }
    std::vector<std::uint16_t> y(x.size(), kGuard16);
    const auto n = static_cast<std::int64_t>(inputs.size());
    CHECK_EQ(ot_cuda_convert_f32_to_bf16(x.data() + offset, y.data() + offset, n, nullptr), cudaSuccess);
    CHECK(y == want);
    std::vector<float> back(x.size(), from_bits(kGuard32));
    CHECK_EQ(ot_cuda_convert_bf16_to_f32(y.data() + offset, back.data() + offset, n, nullptr), cudaSuccess);
    for (std::size_t i = offset; i < back.size(); ++i) CHECK_EQ(bits_of(back[i]), std::uint32_t{want[i]} << 16);
  }
  std::vector<float> x{1.0f};
  std::vector<std::uint16_t> h{0x3f80};
  std::vector<std::uint16_t> y16{kGuard16};
  std::vector<float> y32{2.0f};
  CHECK_EQ(ot_cuda_convert_f32_to_bf16(x.data(), y16.data(), -1, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_convert_bf16_to_f32(h.data(), y32.data(), -1, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(ot_cuda_convert_f32_to_bf16(nullptr, nullptr, 0, nullptr), cudaSuccess);
  CHECK_EQ(ot_cuda_convert_bf16_to_f32(nullptr, nullptr, 0, nullptr), cudaSuccess);
  CHECK_EQ(y16[0], kGuard16);
  CHECK_EQ(y32[0], 2.0f);
}

TEST(convert_launch_shape) {
  // One 4-element step per thread of 256, at least one block, at most 4096.
  CHECK_EQ(k::convert_blocks(1), 1u);
  CHECK_EQ(k::convert_blocks(1024), 1u);
  CHECK_EQ(k::convert_blocks(1025), 2u);
  CHECK_EQ(k::convert_blocks(std::int64_t{1} << 40), 4096u);
}

// The split: hi is x rounded, hi + lo is x to within 2^-16 of |x| (against
// double), lo is 0 where x is not finite; in every mode, through the launcher.
TEST(convert_f32_to_bf16_split_in_every_mode) {
  auto x = ot_test::random_floats(3001, -50.0f, 50.0f, 77);
  x[0] = 0.0f;
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = std::numeric_limits<float>::quiet_NaN();
  x[3] = 1e-30f;
  const auto count = static_cast<std::int64_t>(x.size());
  for (const auto& mode : ot_test::op_modes()) {
    std::vector<std::uint16_t> hi(x.size(), 0xdead), lo(x.size(), 0xdead);
    emu::launch(ot_cuda::Dim3{k::elementwise_blocks(count)}, ot_cuda::Dim3{k::kElementwiseThreads}, 0, mode.options,
                [&](auto& ctx) { k::convert_f32_to_bf16_split(ctx, x.data(), hi.data(), lo.data(), count); });
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      wrong += hi[i] != k::bf16_from_f32_rne(x[i]);
      if (!std::isfinite(x[i])) {
        wrong += lo[i] != 0;
      } else {
        const double sum = ot_test::from_bf16(hi[i]) + ot_test::from_bf16(lo[i]);
        wrong += !(std::abs(sum - double(x[i])) <= std::ldexp(std::abs(double(x[i])), -16));
      }
    }
    CHECK_EQ(wrong, 0);
  }
  std::vector<std::uint16_t> hi(x.size()), lo(x.size());
  CHECK_EQ(ot_cuda_convert_f32_to_bf16_split(x.data(), hi.data(), lo.data(), count, nullptr), cudaSuccess);
  CHECK_EQ(hi[4], k::bf16_from_f32_rne(x[4]));
  CHECK_EQ(ot_cuda_convert_f32_to_bf16_split(x.data(), hi.data(), lo.data(), -1, nullptr), cudaErrorInvalidValue);
}
