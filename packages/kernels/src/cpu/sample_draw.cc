// The CPU backend's token draws (declared in sample_draw.h; the rules are in
// sample.cc's header comment).
#include "sample_draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace ot {

RowStats row_stats(const float* logits, int64_t vocab) {
  float max = kNegInf;
  int64_t argmax = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] > max) {
      max = logits[i];
      argmax = i;
    }
  }
  double z1 = 0.0;
  for (int64_t i = 0; i < vocab; ++i) z1 += std::exp(static_cast<double>(logits[i] - max));
  return {max, static_cast<int32_t>(argmax), static_cast<float>(max + std::log(z1)), z1};
}

namespace {
/** Inverse-CDF draw over the whole vocabulary in vocabulary order. */
int32_t draw_unfiltered(const float* logits, int64_t vocab, const RowStats& s, const Draw& d) {
  const double inv = 1.0 / d.temperature;
  const double scaled_max = s.max * inv;  // argmax of logits/T is argmax of logits (T > 0)
  double z = s.z1;
  if (d.temperature != 1.0) {
    z = 0.0;
    for (int64_t i = 0; i < vocab; ++i) z += std::exp(logits[i] * inv - scaled_max);
  }
  double target = d.u * z;
  int32_t last = s.argmax;
  for (int64_t i = 0; i < vocab; ++i) {
    const double w = std::exp(logits[i] * inv - scaled_max);
    if (w == 0.0) continue;  // a -inf logit (a masked token) is never drawn
    last = static_cast<int32_t>(i);
    target -= w;
    if (target < 0.0) return last;
  }
  return last;  // rounding left a sliver of mass at the end: the last token that has any
}

// Radix select for top-p: the candidates' mass per bin of log-weight below the
// maximum (1/8 nat wide), so that only the bins down to the one where the mass
// reaches top-p (and one more, for rounding) are ordered; the last bin holds all
// the rest. Small candidate sets are ordered whole.
constexpr int kBins = 512;
constexpr double kBinsPerNat = 8.0;
constexpr size_t kSelectAbove = 2048;

int32_t draw_filtered(const float* logits, int64_t vocab, const RowStats& s, const Draw& d) {
  thread_local std::vector<Cand> cand;
  cand.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    const float l = logits[i];
    cand[i] = {std::isnan(l) ? kNegInf : l, static_cast<int32_t>(i)};
  }
  const double inv = 1.0 / d.temperature;
  const double scaled_max = s.max * inv;
  const auto weight = [&](const Cand& c) { return c.key == kNegInf ? 0.0 : std::exp(c.key * inv - scaled_max); };
  // Nats below the maximum, in bins (clamped before the cast: a -inf logit is infinitely deep).
  const auto depth = [&](const Cand& c) {
    return c.key == kNegInf ? kBins : std::min<double>(kBins, (scaled_max - c.key * inv) * kBinsPerNat);
  };
  // Top-k: the k first in order, unsorted; the top-p mass is normalised over them.
  if (d.top_k > 0 && d.top_k < vocab) {
    std::nth_element(cand.begin(), cand.begin() + (d.top_k - 1), cand.end(), before);
    cand.resize(static_cast<size_t>(d.top_k));
  }
  const bool select = d.top_p < 1.0 && cand.size() > kSelectAbove;
  std::array<double, kBins> bin_mass{};
  double z = 0.0;
  for (const Cand& c : cand) {
    const double w = weight(c);
    z += w;
    if (select && w > 0.0) bin_mass[std::clamp(static_cast<int>(depth(c)), 0, kBins - 1)] += w;
  }
  const double nucleus = d.top_p * z;
  // The maximum passes every cut by comparison, not arithmetic: a fused
  // multiply-add could otherwise round it out (min-p 1).
  const auto cut_at = [&](auto keep) {
    cand.erase(std::partition(cand.begin(), cand.end(), [&](const Cand& c) { return c.key >= s.max || keep(c); }),
               cand.end());
  };
  if (select) {
    int last = 0;
    for (double mass = bin_mass[0]; last < kBins - 1 && mass < nucleus;) mass += bin_mass[++last];
    const double limit = last + 2.0;  // bins 0 … last + 1
    if (limit < kBins) cut_at([&](const Cand& c) { return depth(c) < limit; });
  }
  // Min-p keeps a prefix of the order too (p ≥ min_p · p_max ⇔ logit/T ≥ max/T + log min_p);
  // it does not change the top-p normaliser.
  if (d.min_p > 0.0) {
    const double cut = std::log(d.min_p);
    cut_at([&](const Cand& c) { return c.key != kNegInf && c.key * inv - scaled_max >= cut; });
  }
  // The kept prefix in order: stop once its mass reaches top-p.
  std::sort(cand.begin(), cand.end(), before);
  size_t kept = 0;
  double kept_mass = 0.0;
  for (; kept < cand.size() && (d.top_p >= 1.0 || kept_mass < nucleus); ++kept) {
    const double w = weight(cand[kept]);
    if (w == 0.0) break;  // the rest weigh nothing either (-inf logits are never drawn)
    kept_mass += w;
  }
  if (kept == 0) return s.argmax;  // nothing kept (cannot happen with a finite maximum)
  double target = d.u * kept_mass;
  for (size_t i = 0; i < kept; ++i) {
    target -= weight(cand[i]);
    if (target < 0.0) return cand[i].id;
  }
  return cand[kept - 1].id;  // rounding left a sliver of mass at the end
}

}  // namespace

int32_t draw_one(const float* logits, int64_t vocab, const RowStats& s, const Draw& d) {
  // temperature 0 is greedy; a row without a finite maximum (all -inf, or +inf) has no distribution.
  if (d.temperature == 0.0 || !std::isfinite(s.max)) return s.argmax;
  const bool filtered = d.top_k > 0 || d.top_p < 1.0 || d.min_p > 0.0;
  return filtered ? draw_filtered(logits, vocab, s, d) : draw_unfiltered(logits, vocab, s, d);
}

}  // namespace ot
