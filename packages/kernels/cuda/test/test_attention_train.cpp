// kernels/attention_train.cuh in the CPU execution, in every checking mode,
// against a float64 reference of the CPU backend's attention_forward /
// attention_backward (the definition written out in double, same layouts, same
// lse), and against those CPU kernels themselves (../../src/cpu/attention_train.cc).
//
// Errors are relative to the magnitude of the summed terms (op_check.h):
//   out:  Σ_j p_j·|v_j|;  lse: 1 + max_j scale·Σ_c |q_c·k_c| (f32 scores);
//   dv:   Σ_i p_ij·|dOut_i|;  dk, dq: scale · Σ A_ij·|q_i| (·|k_j|), with
//   A_ij = p_ij · (Σ|dOut_i ⊙ v_j| + Σ|dOut_i ⊙ out_i| + |dp_ij − D_i| · (|s_ij| + |lse_i| + 1)),
// the size of ds_ij's terms (dp − D cancels; p's error grows with s − lse).
// The backward's inputs out and lse are the float64 forward's, rounded to
// float, so it is judged on its own.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../include/ot_cuda/launch.h"  // emu::device_options: the emulated device the launchers run on
#include "../kernels/attention_train.cuh"
#include "../../src/cpu/attention.h"
#include "../kernels/launchers.h"
#include "op_check.h"

namespace {

namespace k = ot_cuda::kernels;
namespace emu = ot_cuda::emu;
using ot_cuda::Dim3;

struct Case {
  int num_heads, num_kv_heads, head_dim;
  std::vector<int> lengths;  // per sequence, 0 allowed
};

std::string case_name(const Case& c) {
  std::string s = "heads " + std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) + ", head_dim " +
                  std::to_string(c.head_dim) + ", lengths";
  for (const int l : c.lengths) s += " " + std::to_string(l);
  return s;
}

struct Data {
  int n = 0, num_seqs = 0;
  float scale = 0;
  std::vector<std::int32_t> starts;
  std::vector<float> q, k, v, d_out;
  // The float64 forward, rounded: the backward's inputs.
  std::vector<float> out, lse;
};

struct Reference {
  std::vector<double> out, out_mag, lse, lse_mag;
  std::vector<double> dq, dq_mag, dk, dk_mag, dv, dv_mag;
};

std::size_t q_size(const Case& c, const Data& d) { return std::size_t(d.n) * c.num_heads * c.head_dim; }
std::size_t kv_size(const Case& c, const Data& d) { return std::size_t(d.n) * c.num_kv_heads * c.head_dim; }

double dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int c = 0; c < n; ++c) s += double(a[c]) * b[c];
  return s;
}
double abs_dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int c = 0; c < n; ++c) s += std::abs(double(a[c]) * b[c]);
  return s;
}

// The forward in double: out, lse and their magnitudes.
void reference_forward(const Case& c, const Data& d, Reference& r) {
  const int D = c.head_dim, H = c.num_heads, KV = c.num_kv_heads, group = H / KV;
  r.out.assign(q_size(c, d), 0);
  r.out_mag.assign(q_size(c, d), 0);
  r.lse.assign(std::size_t(d.n) * H, 0);
  r.lse_mag.assign(std::size_t(d.n) * H, 0);
  for (int s = 0; s < d.num_seqs; ++s) {
    for (int i = d.starts[s]; i < d.starts[s + 1]; ++i) {
      for (int h = 0; h < H; ++h) {
        const float* q = d.q.data() + (std::size_t(i) * H + h) * D;
        const int g = h / group, b = d.starts[s];
        std::vector<double> sc(i - b + 1);
        double mx = -INFINITY, smag = 0;
        for (int j = b; j <= i; ++j) {
          const float* kj = d.k.data() + (std::size_t(j) * KV + g) * D;
          sc[j - b] = double(d.scale) * dot(q, kj, D);
          smag = std::max(smag, double(d.scale) * abs_dot(q, kj, D));
          mx = std::max(mx, sc[j - b]);
        }
        double sum = 0;
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        const std::size_t row = std::size_t(i) * H + h;
        r.lse[row] = mx + std::log(sum);
        r.lse_mag[row] = 1 + smag;
        for (int e = 0; e < D; ++e) {
          double o = 0, m = 0;
          for (int j = b; j <= i; ++j) {
            const double vj = d.v[(std::size_t(j) * KV + g) * D + e];
            o += sc[j - b] * vj;
            m += sc[j - b] * std::abs(vj);
          }
          r.out[row * D + e] = o / sum;
          r.out_mag[row * D + e] = m / sum;
        }
      }
    }
  }
}

// The backward in double from the float inputs (d.out, d.lse): p recomputed
// from lse, as the kernels and the CPU backend do.
void reference_backward(const Case& c, const Data& d, Reference& r) {
  const int D = c.head_dim, H = c.num_heads, KV = c.num_kv_heads, group = H / KV;
  const double scale = d.scale;
  for (auto* v : {&r.dq, &r.dq_mag}) v->assign(q_size(c, d), 0);
  for (auto* v : {&r.dk, &r.dk_mag, &r.dv, &r.dv_mag}) v->assign(kv_size(c, d), 0);
  for (int s = 0; s < d.num_seqs; ++s) {
    for (int i = d.starts[s]; i < d.starts[s + 1]; ++i) {
      for (int h = 0; h < H; ++h) {
        const std::size_t row = std::size_t(i) * H + h;
        const float* q = d.q.data() + row * D;
        const float* go = d.d_out.data() + row * D;
        const double delta = dot(go, d.out.data() + row * D, D), delta_mag = abs_dot(go, d.out.data() + row * D, D);
        const double lse = d.lse[row];
        const int g = h / group;
        for (int j = d.starts[s]; j <= i; ++j) {
          const std::size_t kv = (std::size_t(j) * KV + g) * D;
          const float* kj = d.k.data() + kv;
          const float* vj = d.v.data() + kv;
          const double sc = scale * dot(q, kj, D), p = std::exp(sc - lse);
          const double dp = dot(go, vj, D), ds = p * (dp - delta);
          const double a =
              p * (abs_dot(go, vj, D) + delta_mag + std::abs(dp - delta) * (std::abs(sc) + std::abs(lse) + 1));
          for (int e = 0; e < D; ++e) {
            r.dq[row * D + e] += scale * ds * kj[e];
            r.dq_mag[row * D + e] += scale * a * std::abs(double(kj[e]));
            r.dk[kv + e] += scale * ds * q[e];
            r.dk_mag[kv + e] += scale * a * std::abs(double(q[e]));
            r.dv[kv + e] += p * go[e];
            r.dv_mag[kv + e] += p * std::abs(double(go[e]));
          }
        }
      }
    }
  }
}

Data make_data(const Case& c, std::uint64_t seed) {
  Data d;
  d.num_seqs = static_cast<int>(c.lengths.size());
  d.starts.push_back(0);
  for (const int l : c.lengths) d.starts.push_back(d.starts.back() + l);
  d.n = d.starts.back();
  d.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  // q spread wider than k, v: peaked and flat rows both occur.
  d.q = ot_test::random_floats(q_size(c, d), -2.0f, 2.0f, seed);
  d.k = ot_test::random_floats(kv_size(c, d), -1.0f, 1.0f, seed + 1);
  d.v = ot_test::random_floats(kv_size(c, d), -1.0f, 1.0f, seed + 2);
  d.d_out = ot_test::random_floats(q_size(c, d), -1.0f, 1.0f, seed + 3);
  return d;
}

k::TrainAttnShape shape_of(const Case& c, const Data& d) {
  return {d.starts.data(), d.num_seqs, d.n, c.num_heads, c.num_kv_heads, c.head_dim, d.scale};
}

struct Forward {
  std::vector<float> out, lse;
};
struct Backward {
  std::vector<float> dq, dk, dv;
};

// The launches as attention_train.cu's launchers shape them, by hand.
Forward run_forward(const Case& c, const Data& d, const emu::Options& options) {
  Forward f{ot_test::nan_floats(q_size(c, d)), ot_test::nan_floats(std::size_t(d.n) * c.num_heads)};
  const k::TrainForwardParams p{shape_of(c, d), d.q.data(), d.k.data(), d.v.data(), f.out.data(), f.lse.data()};
  emu::launch(k::attention_forward_grid(d.n, c.num_heads), Dim3{k::kTrainThreads},
              k::attention_forward_shared_bytes(c.head_dim), options,
              [&](auto& ctx) { k::attention_train_forward(ctx, p); });
  return f;
}

Backward run_backward(const Case& c, const Data& d, const emu::Options& options) {
  Backward b{ot_test::nan_floats(q_size(c, d)), ot_test::nan_floats(kv_size(c, d)), ot_test::nan_floats(kv_size(c, d))};
  const k::TrainBackwardParams p{shape_of(c, d), d.q.data(),     d.k.data(),  d.v.data(),  d.out.data(),
                                 d.lse.data(),   d.d_out.data(), b.dq.data(), b.dk.data(), b.dv.data()};
  emu::launch(k::attention_delta_grid(d.n, c.num_heads), Dim3{k::kTrainThreads}, 0, options,
              [&](auto& ctx) { k::attention_train_delta(ctx, p); });
  emu::launch(k::attention_dkdv_grid(d.n, c.num_kv_heads), Dim3{k::kTrainThreads},
              k::attention_dkdv_shared_bytes(c.head_dim), options, [&](auto& ctx) { k::attention_train_dkdv(ctx, p); });
  emu::launch(k::attention_dq_grid(d.n, c.num_heads), Dim3{k::kTrainThreads}, k::attention_dq_shared_bytes(c.head_dim),
              options, [&](auto& ctx) { k::attention_train_dq(ctx, p); });
  return b;
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

// The reference (the backward's inputs rounded from its forward), for one case.
struct Prepared {
  Data d;
  Reference r;
};
Prepared prepare(const Case& c, std::uint64_t seed) {
  Prepared p{make_data(c, seed), {}};
  reference_forward(c, p.d, p.r);
  p.d.out.assign(p.r.out.begin(), p.r.out.end());
  p.d.lse.assign(p.r.lse.begin(), p.r.lse.end());
  reference_backward(c, p.d, p.r);
  return p;
}

void check_case(const Case& c, const std::vector<emu::Mode>& modes, std::uint64_t seed) {
  const Prepared pr = prepare(c, seed);
  const std::string name = case_name(c);
  for (const auto& mode : modes) {
    const Forward f = run_forward(c, pr.d, mode.options);
    EXPECT_WITHIN(worst(f.out, pr.r.out, pr.r.out_mag), 1e-5, "forward out (" + name + ") in mode " + mode.name);
    EXPECT_WITHIN(worst(f.lse, pr.r.lse, pr.r.lse_mag), 1e-5, "forward lse (" + name + ") in mode " + mode.name);
    const Backward b = run_backward(c, pr.d, mode.options);
    EXPECT_WITHIN(worst(b.dq, pr.r.dq, pr.r.dq_mag), 1e-5, "backward dq (" + name + ") in mode " + mode.name);
    EXPECT_WITHIN(worst(b.dk, pr.r.dk, pr.r.dk_mag), 1e-5, "backward dk (" + name + ") in mode " + mode.name);
    EXPECT_WITHIN(worst(b.dv, pr.r.dv, pr.r.dv_mag), 1e-5, "backward dv (" + name + ") in mode " + mode.name);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  }
  return true;
}

// Runs fn with the emulated device's options set to `options`, then restores them.
template <class F>
void with_device_options(const emu::Options& options, F fn) {
  const emu::Options saved = emu::device_options();
  emu::device_options() = options;
  try {
    fn();
  } catch (...) {
    emu::device_options() = saved;
    throw;
  }
  emu::device_options() = saved;
}

}  // namespace

TEST(attention_train_launch_shapes) {
  CHECK(k::attention_train_supports(4, 2, 16));
  CHECK(k::attention_train_supports(32, 8, 128));
  CHECK(!k::attention_train_supports(4, 3, 16));  // group not whole
  CHECK(!k::attention_train_supports(4, 2, k::kTrainMaxHeadDim + 1));
  CHECK(!k::attention_train_supports(4, 2, 0));
  // Every pass fits the default 48 KiB of dynamic shared memory at head_dim 128.
  CHECK(k::attention_forward_shared_bytes(k::kTrainMaxHeadDim) <= 48u * 1024u);
  CHECK(k::attention_dq_shared_bytes(k::kTrainMaxHeadDim) <= 48u * 1024u);
  CHECK(k::attention_dkdv_shared_bytes(k::kTrainMaxHeadDim) <= 48u * 1024u);
  // Tiles of tokens: none for no tokens, a partial tile for the rest.
  CHECK_EQ(k::attention_forward_grid(0, 4).x, 0u);
  CHECK_EQ(k::attention_forward_grid(17, 4).x, 2u);
  CHECK_EQ(k::attention_forward_grid(17, 4).y, 4u);
  CHECK_EQ(k::attention_dq_grid(13, 2).x, 2u);
  CHECK_EQ(k::attention_dkdv_grid(33, 3).x, 3u);
  CHECK_EQ(k::attention_dkdv_grid(33, 3).y, 3u);
  CHECK_EQ(k::attention_delta_grid(5, 3).x, 4u);  // 15 rows, 4 a block
  CHECK_EQ(k::attention_delta_grid(0, 3).x, 0u);
}

TEST(attention_train_matches_reference_in_every_mode) {
  const auto modes = ot_test::op_modes();
  // Sequences crossing 16-, 12- and 32-token tiles, a boundary inside each
  // kind of tile, empty sequences first, inside and last; GQA 1, 2 and 4.
  check_case({4, 2, 16, {0, 5, 0, 38, 1, 19, 0}}, modes, 101);  // 63 tokens
  check_case({4, 1, 8, {23, 10}}, modes, 102);                  // 33 tokens
  // Edge shapes: one token; one sequence of 3.
  check_case({1, 1, 8, {1}}, modes, 103);
  check_case({2, 2, 64, {3}}, modes, 104);
  // The widest head_dim (four columns a lane), in the all-checks mode.
  const std::vector<emu::Mode> all{emu::checking_modes(23)[4]};
  check_case({2, 1, 128, {2, 35}}, all, 105);
  check_case({8, 2, 64, {17, 4}}, all, 106);
}

TEST(attention_train_launchers_match_their_bodies_and_validate) {
  const Case c{4, 2, 16, {7, 0, 26}};
  const Prepared pr = prepare(c, 201);
  const Data& d = pr.d;
  const emu::Mode mode = emu::checking_modes(29)[4];
  const Forward by_hand_f = run_forward(c, d, mode.options);
  const Backward by_hand_b = run_backward(c, d, mode.options);
  Forward f{ot_test::nan_floats(q_size(c, d)), ot_test::nan_floats(std::size_t(d.n) * c.num_heads)};
  Backward b{ot_test::nan_floats(q_size(c, d)), ot_test::nan_floats(kv_size(c, d)), ot_test::nan_floats(kv_size(c, d))};
  with_device_options(mode.options, [&] {
    CHECK_EQ(ot_cuda_attention_forward_f32(d.q.data(), d.k.data(), d.v.data(), f.out.data(), f.lse.data(), d.n,
                                           d.starts.data(), d.num_seqs, c.num_heads, c.num_kv_heads, c.head_dim,
                                           d.scale, nullptr),
             cudaSuccess);
    CHECK_EQ(ot_cuda_attention_backward_f32(d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.lse.data(),
                                            d.d_out.data(), b.dq.data(), b.dk.data(), b.dv.data(), d.n, d.starts.data(),
                                            d.num_seqs, c.num_heads, c.num_kv_heads, c.head_dim, d.scale, nullptr),
             cudaSuccess);
  });
  CHECK(same_bits(f.out, by_hand_f.out));
  CHECK(same_bits(f.lse, by_hand_f.lse));
  CHECK(same_bits(b.dq, by_hand_b.dq));
  CHECK(same_bits(b.dk, by_hand_b.dk));
  CHECK(same_bits(b.dv, by_hand_b.dv));

  // Refused: a negative count, no sequences for tokens, a partial group, a
  // head_dim past 128 or of 0.
  const auto fwd = [&](int n, int seqs, int heads, int kv, int dim) {
    return ot_cuda_attention_forward_f32(d.q.data(), d.k.data(), d.v.data(), f.out.data(), f.lse.data(), n,
                                         d.starts.data(), seqs, heads, kv, dim, d.scale, nullptr);
  };
  const auto bwd = [&](int n, int seqs, int heads, int kv, int dim) {
    return ot_cuda_attention_backward_f32(d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.lse.data(),
                                          d.d_out.data(), b.dq.data(), b.dk.data(), b.dv.data(), n, d.starts.data(),
                                          seqs, heads, kv, dim, d.scale, nullptr);
  };
  for (const auto& launch : {std::function<cudaError_t(int, int, int, int, int)>(fwd),
                             std::function<cudaError_t(int, int, int, int, int)>(bwd)}) {
    CHECK_EQ(launch(-1, 3, 4, 2, 16), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, 0, 4, 2, 16), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, -1, 4, 2, 16), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, 3, 4, 3, 16), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, 3, 4, 0, 16), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, 3, 4, 2, 129), cudaErrorInvalidValue);
    CHECK_EQ(launch(d.n, 3, 4, 2, 0), cudaErrorInvalidValue);
  }
  // No tokens: nothing launched, nothing written.
  std::vector<float> untouched(1, std::numeric_limits<float>::quiet_NaN());
  const std::int32_t no_tokens[1] = {0};
  CHECK_EQ(ot_cuda_attention_forward_f32(d.q.data(), d.k.data(), d.v.data(), untouched.data(), untouched.data(), 0,
                                         no_tokens, 0, 4, 2, 16, d.scale, nullptr),
           cudaSuccess);
  CHECK_EQ(ot_cuda_attention_backward_f32(d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.lse.data(),
                                          d.d_out.data(), untouched.data(), untouched.data(), untouched.data(), 0,
                                          no_tokens, 0, 4, 2, 16, d.scale, nullptr),
           cudaSuccess);
  CHECK(std::isnan(untouched[0]));
}

TEST(attention_train_large_shape) {
  const char* large = std::getenv("OT_CUDA_EMU_LARGE");
  if (large == nullptr || large[0] != '1') return;
  check_case({8, 2, 128, {100, 1, 57, 0, 80}}, {emu::checking_modes(5)[4]}, 301);
}

// The CPU backend's kernels on the same inputs: both within 1e-5 of float64,
// so within 2e-5 of each other, judged by the same magnitudes.
TEST(attention_train_matches_the_cpu_backend) {
  const Case c{4, 2, 16, {9, 0, 30, 5}};
  const Prepared pr = prepare(c, 301);
  const Data& d = pr.d;
  const ot::AttentionHeads heads{c.num_heads, c.num_kv_heads, c.head_dim, d.scale};
  std::vector<float> out(q_size(c, d)), lse(std::size_t(d.n) * c.num_heads);
  ot::attention_forward(heads, d.n, d.starts.data(), d.num_seqs, d.q.data(), d.k.data(), d.v.data(), out.data(),
                        lse.data());
  std::vector<float> dq(q_size(c, d)), dk(kv_size(c, d)), dv(kv_size(c, d));
  ot::attention_backward(heads, d.n, d.starts.data(), d.num_seqs, d.q.data(), d.k.data(), d.v.data(), d.out.data(),
                         d.lse.data(), d.d_out.data(), dq.data(), dk.data(), dv.data());
  const auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const Forward f = run_forward(c, d, {});
  const Backward b = run_backward(c, d, {});
  EXPECT_WITHIN(worst(f.out, as_double(out), pr.r.out_mag), 2e-5, "out against the CPU backend");
  EXPECT_WITHIN(worst(f.lse, as_double(lse), pr.r.lse_mag), 2e-5, "lse against the CPU backend");
  EXPECT_WITHIN(worst(b.dq, as_double(dq), pr.r.dq_mag), 2e-5, "dq against the CPU backend");
  EXPECT_WITHIN(worst(b.dk, as_double(dk), pr.r.dk_mag), 2e-5, "dk against the CPU backend");
  EXPECT_WITHIN(worst(b.dv, as_double(dv), pr.r.dv_mag), 2e-5, "dv against the CPU backend");
}
