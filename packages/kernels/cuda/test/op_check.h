// What the op tests (test_<op>.cpp) share: the checking modes every op runs in,
// random data, and the worst error of a result against a float64 reference.
//
// Error: |got − ref| / max(|ref|, mag), where mag is the sum of the magnitudes
// of the terms that make ref (|a·c| + |b·s| for a − b-style sums); for a plain
// product mag = |ref|. It is float's forward-error bound: a result whose
// terms cancel is judged against the size of its terms, not of the remainder.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../include/ot_cuda/ctx.h"
#include "check.h"

namespace ot_test {

// emu::checking_modes(seed) plus the all-checks mode (its own seed) on two OS threads.
inline std::vector<ot_cuda::emu::Mode> op_modes(std::uint64_t seed = 3, std::uint64_t all_checks_seed = 11) {
  auto modes = ot_cuda::emu::checking_modes(seed);
  modes.push_back({"all-checks seed " + std::to_string(all_checks_seed) + ", 2 workers",
                   ot_cuda::emu::checking_modes(all_checks_seed)[4].options});
  modes.back().options.workers = 2;
  return modes;
}

// "m x n x k", for failure messages.
inline std::string shape_name(int m, int n, int k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

inline std::vector<float> random_floats(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline std::vector<float> nan_floats(std::size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

struct Worst {
  double err = 0;
  std::size_t at = 0;
  void add(double got, double ref, double mag, std::size_t i) {
    const double e = std::abs(got - ref) / std::max({std::abs(ref), std::abs(mag), 1e-30});
    if (std::isnan(e) || e > err) {
      err = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      at = i;
    }
  }
};

// Records a failure naming the op, case and element when worst.err > tol.
inline void expect_within(const Worst& w, double tol, const std::string& what, const char* file, int line) {
  if (!(w.err <= tol)) {
    fail(file, line, what + ": error " + std::to_string(w.err) + " at element " + std::to_string(w.at));
  }
}

}  // namespace ot_test

#define EXPECT_WITHIN(worst, tol, what) ot_test::expect_within((worst), (tol), (what), __FILE__, __LINE__)
