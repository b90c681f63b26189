// What the multi-LoRA tests (test_lora.cpp: segments, test_lora_rows.cpp: per-row
// slots) share: one case's random adapters, inputs and accumulators, and the
// same data in magnitudes, over which the reference gives each element's
// error scale (the sum of its terms' magnitudes: y0 + delta may cancel to ~0).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ot_test {

struct LoraData {
  std::vector<std::vector<float>> a, b;      // per adapter: A [r, d_in], B [d_out, r]
  std::vector<std::vector<float>> da0, db0;  // gradients' initial values (accumulated into)
  std::vector<float> scales;
  std::vector<float> x, dy, y0, dx0;  // n rows
};

// Uniform(-1, 1) values for adapters of `ranks` and n rows; adapter a's scale is 0.5 + a / 4.
inline LoraData make_lora_data(int d_in, int d_out, const std::vector<int>& ranks, std::size_t n,
                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](std::size_t count) {
    std::vector<float> v(count);
    for (auto& e : v) e = u(rng);
    return v;
  };
  const std::size_t in = static_cast<std::size_t>(d_in), out = static_cast<std::size_t>(d_out);
  LoraData d;
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    const std::size_t r = static_cast<std::size_t>(ranks[a]);
    d.a.push_back(fill(r * in));
    d.b.push_back(fill(out * r));
    d.da0.push_back(fill(r * in));
    d.db0.push_back(fill(out * r));
    d.scales.push_back(0.5f + 0.25f * static_cast<float>(a));
  }
  d.x = fill(n * in);
  d.dy = fill(n * out);
  d.y0 = fill(n * out);
  d.dx0 = fill(n * in);
  return d;
}

// The same data with every value replaced by its magnitude.
inline LoraData lora_magnitudes(LoraData d) {
  auto abs_all = [](std::vector<float>& v) {
    for (auto& e : v) e = std::abs(e);
  };
  for (auto* v : {&d.x, &d.dy, &d.y0, &d.dx0, &d.scales}) abs_all(*v);
  for (auto* vs : {&d.a, &d.b, &d.da0, &d.db0}) {
    for (auto& v : *vs) abs_all(v);
  }
  return d;
}

}  // namespace ot_test
