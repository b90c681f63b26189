// The device check: every kernels/*.cu op on a real GPU against a float64 host
// reference (the same shapes and tolerances as test/test_<op>.cpp), then the
// figures issue 46 asks for, timed with CUDA events. Prints ONE JSON line.
//
//   device_check                 op checks + figures; exit 1 if an op fails,
//                                3 if there is no usable device
//   device_check --probe         the device line alone (or, without a driver,
//                                {"device": null, "reason": ...}); exit 0
//   device_check --ops-only [--ops a,b]   op checks only (compute-sanitizer runs)
//
// Built by ../../scripts/device-check.sh with nvcc, linked with the kernels'
// launchers (launchers.h), blaslt/loader.cpp and the static CUDA runtime. No
// Boost, no Node.
#include <cuda_runtime.h>

#include "../test/bf16.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../blaslt/loader.h"
#include "../kernels/launchers.h"
#include "../kernels/lora.cuh"
// The paged attention kernel, where it exists: its body is launched here through
// the header (a change to its parameters fails this build rather than the ABI).
#if __has_include("../kernels/attention.cuh")
#include "../kernels/attention.cuh"
#define OT_DC_ATTENTION 1
#endif

namespace {

namespace k = ot_cuda::kernels;

// ---------------------------------------------------------------- utilities

struct CudaFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string err_line(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + std::to_string(static_cast<int>(e)) + "): " + cudaGetErrorString(e);
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaFailure(std::string(what) + ": " + err_line(e));
}
#define CK(call) ck((call), #call)

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    std::snprintf(b, sizeof b, "%.0f", v);
  } else {
    std::snprintf(b, sizeof b, "%.4g", v);
  }
  return b;
}

// A JSON object built in insertion order.
struct Obj {
  std::vector<std::pair<std::string, std::string>> fields;
  Obj& raw(const std::string& key, const std::string& v) {
    fields.emplace_back(key, v);
    return *this;
  }
  Obj& str(const std::string& key, const std::string& v) { return raw(key, json_str(v)); }
  Obj& num(const std::string& key, double v) { return raw(key, json_num(v)); }
  Obj& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  std::string dump() const {
    std::string o = "{";
    for (std::size_t i = 0; i < fields.size(); ++i) o += (i ? ", " : "") + json_str(fields[i].first) + ": " + fields[i].second;
    return o + "}";
  }
};

template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  Dev() = default;
  explicit Dev(std::size_t count) : n(count) { CK(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(count, 1) * sizeof(T))); }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) { put(h); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  Dev(Dev&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  Dev& operator=(Dev&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~Dev() {
    if (p) cudaFree(p);
  }
  void put(const std::vector<T>& h) {
    if (!h.empty()) CK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> get() const {
    std::vector<T> h(n);
    if (n) CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<float> random_floats(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}
std::vector<float> nan_floats(std::size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

using ot_test::from_bf16;
using ot_test::to_bf16;

// |got − ref| / max(|ref|, mag, 1e-30), worst over the elements (inf on NaN):
// test/op_check.h's cancellation-aware error.
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

// Per op: the worst error / tolerance ratio over its cases, and the first failure.
struct OpResult {
  int cases = 0;
  double worst_ratio = 0;  // max err / tol (<= 1 passes)
  double worst_err = 0;
  double tol = 0;
  std::string failure;
  bool ok() const { return failure.empty(); }
};

std::map<std::string, OpResult> g_ops;
std::vector<std::string> g_op_order;

OpResult& op(const std::string& name) {
  if (!g_ops.count(name)) g_op_order.push_back(name);
  return g_ops[name];
}

void expect(const std::string& name, const Worst& w, double tol, const std::string& what) {
  OpResult& r = op(name);
  r.cases++;
  const double ratio = tol > 0 ? w.err / tol : (w.err == 0 ? 0 : std::numeric_limits<double>::infinity());
  if (!(ratio <= r.worst_ratio)) {
    r.worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
    r.worst_err = w.err;
    r.tol = tol;
  }
  if (!(w.err <= tol) && r.failure.empty()) {
    r.failure = what + ": error " + json_num(w.err) + " > " + json_num(tol) + " at element " + std::to_string(w.at);
  }
}

void fail_op(const std::string& name, const std::string& why) {
  OpResult& r = op(name);
  r.cases++;
  if (r.failure.empty()) r.failure = why;
}

// ---------------------------------------------------------------- op checks

void check_rmsnorm() {
  struct Shape {
    int rows, cols;
  };
  for (const Shape s : std::vector<Shape>{{1, 1}, {3, 7}, {2, 32}, {5, 130}, {4, 1000}, {3, 4096}}) {
    const std::size_t size = std::size_t(s.rows) * s.cols;
    const auto x = random_floats(size, -2.0f, 2.0f, 42 + s.cols), w = random_floats(s.cols, 0.5f, 1.5f, 43 + s.cols);
    const float eps = 1e-6f;
    Dev<float> dx(x), dw(w), dy(nan_floats(size));
    CK(ot_cuda_rmsnorm_f32(dx.p, dw.p, dy.p, nullptr, s.rows, s.cols, eps, nullptr));
    const auto y = dy.get();
    Worst wst;
    for (int r = 0; r < s.rows; ++r) {
      double ss = 0;
      for (int c = 0; c < s.cols; ++c) ss += double(x[r * s.cols + c]) * x[r * s.cols + c];
      const double inv = 1.0 / std::sqrt(ss / s.cols + eps);
      for (int c = 0; c < s.cols; ++c) {
        const double ref = x[r * s.cols + c] * inv * w[c];
        wst.add(y[r * s.cols + c], ref, ref, r * s.cols + c);
      }
    }
    expect("rmsnorm", wst, 1e-5, "rmsnorm " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
  }
}

void check_rmsnorm_backward() {
  struct Shape {
    int rows, cols;
  };
  struct Variant {
    bool stored_r, accumulate, with_dw;
  };
  for (const Shape s : std::vector<Shape>{{1, 1}, {3, 7}, {2, 32}, {5, 130}, {4, 1000}}) {
    for (const Variant v : std::vector<Variant>{{false, false, true}, {true, true, true}, {true, false, false}}) {
      const int rows = s.rows, cols = s.cols;
      const std::size_t size = std::size_t(rows) * cols;
      const auto x = random_floats(size, -2.0f, 2.0f, 50 + size), g = random_floats(size, -1.0f, 1.0f, 51 + size);
      const auto w = random_floats(cols, 0.5f, 1.5f, 52 + cols);
      const auto dx0 = v.accumulate ? random_floats(size, -1.0f, 1.0f, 53) : nan_floats(size);
      const auto dw0 = random_floats(cols, -1.0f, 1.0f, 54);
      const float eps = 1e-5f;
      std::vector<double> r(rows);
      std::vector<float> r_stored(rows);
      for (int i = 0; i < rows; ++i) {
        double ss = 0;
        for (int c = 0; c < cols; ++c) ss += double(x[std::size_t(i) * cols + c]) * x[std::size_t(i) * cols + c];
        r_stored[i] = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
        r[i] = v.stored_r ? double(r_stored[i]) : 1.0 / std::sqrt(ss / cols + double(eps));
      }
      Dev<float> d_x(x), d_g(g), d_w(w), d_r(r_stored), d_dx(dx0), d_dw(dw0);
      CK(ot_cuda_rmsnorm_backward_f32(d_x.p, d_w.p, v.stored_r ? d_r.p : nullptr, eps, d_g.p, d_dx.p, v.accumulate,
                                      v.with_dw ? d_dw.p : nullptr, rows, cols, nullptr));
      const auto dx = d_dx.get(), dw = d_dw.get();
      Worst wdx, wdw;
      std::vector<double> ref_dw(dw0.begin(), dw0.end()), mag_dw(cols);
      for (int c = 0; c < cols; ++c) mag_dw[c] = std::abs(ref_dw[c]);
      for (int i = 0; i < rows; ++i) {
        const std::size_t o = std::size_t(i) * cols;
        double dot = 0, dot_mag = 0;
        for (int c = 0; c < cols; ++c) {
          dot += double(g[o + c]) * w[c] * x[o + c];
          dot_mag += std::abs(double(g[o + c]) * w[c] * x[o + c]);
        }
        const double ri = r[i], coef = ri * ri * ri / cols;
        for (int c = 0; c < cols; ++c) {
          const double first = ri * w[c] * g[o + c], second = coef * x[o + c] * dot;
          const double base = v.accumulate ? double(dx0[o + c]) : 0.0;
          const double mag = std::abs(base) + std::abs(first) + std::abs(coef * x[o + c]) * dot_mag;
          wdx.add(dx[o + c], base + first - second, mag, o + c);
          ref_dw[c] += double(g[o + c]) * x[o + c] * ri;
          mag_dw[c] += std::abs(double(g[o + c]) * x[o + c] * ri);
        }
      }
      for (int c = 0; c < cols; ++c) {
        if (v.with_dw) {
          wdw.add(dw[c], ref_dw[c], mag_dw[c], c);
        } else {
          wdw.add(dw[c], dw0[c], 0, c);
        }
      }
      const std::string what = "rmsnorm_backward " + std::to_string(rows) + "x" + std::to_string(cols) +
                               (v.stored_r ? " stored-r" : " recomputed-r") + (v.accumulate ? " accumulate" : "") +
                               (v.with_dw ? " dw" : " no-dw");
      expect("rmsnorm_backward", wdx, 1e-5, what + " dx");
      expect("rmsnorm_backward", wdw, 1e-5, what + " dw");
    }
  }
}

void check_rope() {
  struct Shape {
    int n, heads, head_dim, rot_half;
  };
  for (const Shape s : std::vector<Shape>{{1, 1, 2, 1}, {3, 2, 8, 4}, {5, 3, 11, 3}, {4, 7, 64, 32}, {2, 5, 130, 65}}) {
    for (const bool inverse : {false, true}) {
      const std::string name = inverse ? "rope_backward" : "rope_forward";
      const std::size_t size = std::size_t(s.n) * s.heads * s.head_dim;
      const auto x0 = random_floats(size, -2.0f, 2.0f, 30 + size + inverse);
      std::vector<std::int32_t> positions(s.n);
      for (int i = 0; i < s.n; ++i) positions[i] = i == 0 ? 0 : i == 1 ? 131071 : (i * 977) % 4096;
      std::vector<float> inv_freq(s.rot_half);
      for (int q = 0; q < s.rot_half; ++q) inv_freq[q] = static_cast<float>(std::pow(10000.0, -double(q) / s.rot_half));
      const float scale = 1.25f;
      Dev<float> d_x(x0), d_f(inv_freq);
      Dev<std::int32_t> d_p(positions);
      CK((inverse ? ot_cuda_rope_backward_f32 : ot_cuda_rope_forward_f32)(d_x.p, d_p.p, d_f.p, s.n, s.heads,
                                                                          s.head_dim, s.rot_half, scale, nullptr));
      const auto x = d_x.get();
      Worst w;
      int passthrough_changed = 0;
      const double sign = inverse ? -1.0 : 1.0;
      for (int i = 0; i < s.n; ++i) {
        for (int h = 0; h < s.heads; ++h) {
          const std::size_t base = (std::size_t(i) * s.heads + h) * s.head_dim;
          for (int q = 0; q < s.rot_half; ++q) {
            const double angle = double(positions[i]) * double(inv_freq[q]);
            const double cs = scale * std::cos(angle), sn = sign * scale * std::sin(angle);
            const double a = x0[base + q], b = x0[base + s.rot_half + q];
            const std::size_t ia = base + q, ib = ia + s.rot_half;
            w.add(x[ia], a * cs - b * sn, std::abs(a * cs) + std::abs(b * sn), ia);
            w.add(x[ib], b * cs + a * sn, std::abs(b * cs) + std::abs(a * sn), ib);
          }
          for (int d = 2 * s.rot_half; d < s.head_dim; ++d) passthrough_changed += !(x[base + d] == x0[base + d]);
        }
      }
      const std::string what = name + " " + std::to_string(s.n) + "x" + std::to_string(s.heads) + "x" +
                               std::to_string(s.head_dim) + " rot_half " + std::to_string(s.rot_half);
      expect(name, w, 1e-5, what);
      if (passthrough_changed) fail_op(name, what + ": dimensions past 2*rot_half changed");
    }
  }
}

void check_swiglu() {
  auto sigmoid = [](double g) { return 1.0 / (1.0 + std::exp(-g)); };
  for (const std::int64_t count : {1, 7, 255, 257, 1000, 3001, 1001}) {
    const auto n = static_cast<std::size_t>(count);
    const auto gate = random_floats(n, -8.0f, 8.0f, 1 + n), up = random_floats(n, -2.0f, 2.0f, 2 + n);
    const auto dy = random_floats(n, -2.0f, 2.0f, 3 + n);
    Dev<float> d_g(gate), d_u(up), d_dy(dy), d_out(nan_floats(n)), d_dg(nan_floats(n)), d_du(nan_floats(n));
    CK(ot_cuda_swiglu_forward_f32(d_g.p, d_u.p, d_out.p, count, nullptr));
    CK(ot_cuda_swiglu_backward_f32(d_dy.p, d_g.p, d_u.p, d_dg.p, d_du.p, count, nullptr));
    const auto out = d_out.get(), dg = d_dg.get(), du = d_du.get();
    Worst w_out, w_dg, w_du;
    for (std::size_t i = 0; i < n; ++i) {
      const double g = gate[i], u = up[i], d = dy[i], sg = sigmoid(g);
      const double ref_out = g * sg * u, ref_du = d * g * sg;
      const double ref_dg = d * u * sg * (1.0 + g * (1.0 - sg));
      const double mag_dg = std::abs(d * u * sg) * (1.0 + std::abs(g) * (1.0 - sg));
      w_out.add(out[i], ref_out, ref_out, i);
      w_du.add(du[i], ref_du, ref_du, i);
      w_dg.add(dg[i], ref_dg, mag_dg, i);
    }
    const std::string what = "swiglu count " + std::to_string(count);
    expect("swiglu_forward", w_out, 1e-5, what + " out");
    expect("swiglu_backward", w_du, 1e-5, what + " d_up");
    expect("swiglu_backward", w_dg, 1e-5, what + " d_gate");
  }
}

void check_embedding() {
  struct Case {
    int n, vocab;
    bool all_same;
  };
  for (const int d : {1, 7, 33, 300}) {
    for (const Case c : std::vector<Case>{{1, 3, false}, {5, 11, false}, {40, 11, false}, {17, 5, true}}) {
      std::vector<std::int32_t> ids(c.n);
      for (int i = 0; i < c.n; ++i) ids[i] = c.all_same ? c.vocab - 1 : (i * 7 + 3) % c.vocab;
      const std::size_t table_size = std::size_t(c.vocab) * d, out_size = std::size_t(c.n) * d;
      const auto table = random_floats(table_size, -1.0f, 1.0f, 40 + table_size);
      const auto dy = random_floats(out_size, -1.0f, 1.0f, 41 + out_size);
      const auto dt0 = random_floats(table_size, -0.5f, 0.5f, 42 + table_size);
      Dev<std::int32_t> d_ids(ids);
      Dev<float> d_table(table), d_dy(dy), d_out(nan_floats(out_size)), d_dt(dt0);
      CK(ot_cuda_embedding_forward_f32(d_ids.p, d_table.p, d_out.p, c.n, d, nullptr));
      CK(ot_cuda_embedding_backward_f32(d_ids.p, d_dy.p, d_dt.p, c.n, d, nullptr));
      const auto out = d_out.get(), dt = d_dt.get();
      Worst f, w;
      for (int i = 0; i < c.n; ++i) {
        for (int j = 0; j < d; ++j) {
          const double ref = table[std::size_t(ids[i]) * d + j];
          f.add(out[std::size_t(i) * d + j], ref, ref, std::size_t(i) * d + j);
        }
      }
      std::vector<double> ref(dt0.begin(), dt0.end()), mag(table_size);
      for (std::size_t j = 0; j < table_size; ++j) mag[j] = std::abs(ref[j]);
      for (int i = 0; i < c.n; ++i) {
        for (int j = 0; j < d; ++j) {
          ref[std::size_t(ids[i]) * d + j] += dy[std::size_t(i) * d + j];
          mag[std::size_t(ids[i]) * d + j] += std::abs(dy[std::size_t(i) * d + j]);
        }
      }
      for (std::size_t j = 0; j < table_size; ++j) w.add(dt[j], ref[j], mag[j], j);
      const std::string what = "embedding n " + std::to_string(c.n) + " d " + std::to_string(d) + " vocab " +
                               std::to_string(c.vocab) + (c.all_same ? " (one id)" : "");
      expect("embedding_forward", f, 0.0, what + " forward (exact copy)");
      expect("embedding_backward", w, 1e-5, what + " d_table");
    }
  }
}

void check_adamw() {
  for (const std::int64_t step : {1, 7}) {
    const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.1, grad_scale = 0.37;
    for (const std::int64_t count : {1, 7, 257, 1000, 777}) {
      const auto n = static_cast<std::size_t>(count);
      const auto p0 = random_floats(n, -1.0f, 1.0f, 10 + n), grad = random_floats(n, -3.0f, 3.0f, 11 + n);
      const auto m0 = random_floats(n, -0.5f, 0.5f, 12 + n), v0 = random_floats(n, 0.0f, 0.5f, 13 + n);
      Dev<float> d_p(p0), d_g(grad), d_m(m0), d_v(v0);
      CK(ot_cuda_adamw_step_f32(d_p.p, d_g.p, d_m.p, d_v.p, count, lr, beta1, beta2, eps, wd, step, grad_scale, nullptr));
      const auto p = d_p.get(), m = d_m.get(), v = d_v.get();
      const double bias1 = 1.0 - std::pow(beta1, double(step)), bias2 = 1.0 - std::pow(beta2, double(step));
      Worst wp, wm, wv;
      for (std::size_t i = 0; i < n; ++i) {
        const double g = grad_scale * grad[i];
        const double mi = beta1 * m0[i] + (1 - beta1) * g, vi = beta2 * v0[i] + (1 - beta2) * g * g;
        const double decayed = p0[i] * (1 - lr * wd);
        const double st = lr / bias1 * mi / (std::sqrt(vi / bias2) + eps);
        wp.add(p[i], decayed - st, std::abs(decayed) + std::abs(st), i);
        wm.add(m[i], mi, std::abs(beta1 * m0[i]) + std::abs((1 - beta1) * g), i);
        wv.add(v[i], vi, vi, i);
      }
      const std::string what = "adamw count " + std::to_string(count) + " step " + std::to_string(step);
      expect("adamw", wp, 1e-5, what + " param");
      expect("adamw", wm, 1e-5, what + " m");
      expect("adamw", wv, 1e-5, what + " v");
    }
  }
}

void check_sum_of_squares() {
  for (const std::int64_t count : {1, 7, 255, 256, 1000, 5003, 4099}) {
    const auto x = random_floats(static_cast<std::size_t>(count), -3.0f, 3.0f, 20 + count);
    Dev<float> d_x(x);
    Dev<double> d_out(std::vector<double>{std::numeric_limits<double>::quiet_NaN()});
    CK(ot_cuda_sum_of_squares_f32(d_x.p, count, d_out.p, nullptr));
    const double out = d_out.get()[0];
    double ref = 0;
    for (const float v : x) ref += double(v) * double(v);
    Worst w;
    w.add(out, ref, ref, 0);
    // Both accumulate in float64: only the order of the additions differs.
    expect("sum_of_squares", w, 1e-12, "sum_of_squares count " + std::to_string(count));
  }
}

// One bf16 product on our GEMM, against float64 over the same bf16 inputs.
void check_gemm_bf16() {
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : std::vector<Shape>{{1, 1, 1}, {3, 5, 7}, {17, 9, 16}, {16, 8, 32}, {33, 70, 48}, {65, 129, 40},
                                          {7, 3, 100}, {256, 320, 1024}}) {
    for (const bool exact : {true, false}) {
      std::mt19937_64 rng(42 + static_cast<std::uint64_t>(s.m * 1000 + s.n * 10 + s.k) + (exact ? 0 : 1));
      std::uniform_real_distribution<float> u(-2.0f, 2.0f);
      std::uniform_int_distribution<int> small(-8, 8);
      auto gen = [&](bool scale) {
        return exact ? to_bf16(static_cast<float>(small(rng)) / (scale ? 8.0f : 1.0f)) : to_bf16(u(rng));
      };
      std::vector<std::uint16_t> x(std::size_t(s.m) * s.k), w(std::size_t(s.n) * s.k);
      for (auto& v : x) v = gen(true);
      for (auto& v : w) v = gen(false);
      Dev<std::uint16_t> d_x(x), d_w(w);
      Dev<float> d_y(nan_floats(std::size_t(s.m) * s.n));
      CK(ot_cuda_gemm_bf16_xwt(d_x.p, d_w.p, d_y.p, s.m, s.n, s.k, nullptr));
      const auto y = d_y.get();
      std::vector<double> ref(y.size()), mag(y.size());
      double max_ref = 0;
      for (int r = 0; r < s.m; ++r) {
        for (int c = 0; c < s.n; ++c) {
          double acc = 0, a = 0;
          for (int i = 0; i < s.k; ++i) {
            const double p = from_bf16(x[std::size_t(r) * s.k + i]) * from_bf16(w[std::size_t(c) * s.k + i]);
            acc += p;
            a += std::abs(p);
          }
          ref[std::size_t(r) * s.n + c] = acc;
          mag[std::size_t(r) * s.n + c] = a;
          max_ref = std::max(max_ref, std::abs(acc));
        }
      }
      // exact data: <= 1e-5 relative; random: within f32 accumulation error
      // (|err| <= k·2^-24·Σ|x w|) and <= 2e-2 relative (floor 1e-3·max|ref|).
      Worst rel, bound;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double floor = std::max(std::abs(ref[i]), 1e-3 * max_ref);
        rel.add(y[i], ref[i], floor, i);
        const double b = s.k * std::ldexp(1.0, -24) * mag[i];
        if (std::abs(double(y[i]) - ref[i]) > b || std::isnan(y[i])) bound.add(y[i], ref[i], b, i);
      }
      const std::string what = "gemm_bf16 " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                               std::to_string(s.k) + (exact ? " exact data" : " random data");
      expect("gemm_bf16", rel, exact ? 1e-5 : 2e-2, what + " relative");
      if (!exact) expect("gemm_bf16", bound, 0.0, what + " beyond the f32 accumulation bound");
    }
  }
}

// ---- multi-LoRA: test/test_lora.cpp's cases and float64 definition.
struct LoraCase {
  const char* name;
  int d_in, d_out;
  std::vector<int> ranks;
  std::vector<std::int32_t> slots;
};
struct LoraData {
  std::vector<std::vector<float>> a, b, da0, db0;
  std::vector<float> scales, x, dy, y0, dx0;
};
struct LoraResult {
  std::vector<double> y, dx;
  std::vector<std::vector<double>> da, db;
};

LoraData lora_data(const LoraCase& c, std::uint64_t seed, bool magnitudes) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](std::size_t count) {
    std::vector<float> v(count);
    for (auto& e : v) e = magnitudes ? std::abs(u(rng)) : u(rng);
    return v;
  };
  const std::size_t n = c.slots.size();
  LoraData d;
  for (std::size_t a = 0; a < c.ranks.size(); ++a) {
    const std::size_t r = static_cast<std::size_t>(c.ranks[a]);
    d.a.push_back(fill(r * c.d_in));
    d.b.push_back(fill(c.d_out * r));
    d.da0.push_back(fill(r * c.d_in));
    d.db0.push_back(fill(c.d_out * r));
    d.scales.push_back(0.5f + 0.25f * static_cast<float>(a));
  }
  d.x = fill(n * c.d_in);
  d.dy = fill(n * c.d_out);
  d.y0 = fill(n * c.d_out);
  d.dx0 = fill(n * c.d_in);
  return d;
}

LoraResult lora_reference(const LoraCase& c, const LoraData& d) {
  const int n = static_cast<int>(c.slots.size());
  LoraResult res;
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
      for (int kk = 0; kk < c.d_in; ++kk) t[q] += double(d.x[i * c.d_in + kk]) * d.a[a][q * c.d_in + kk];
      for (int o = 0; o < c.d_out; ++o) u[q] += s * double(d.dy[i * c.d_out + o]) * d.b[a][o * r + q];
    }
    for (int o = 0; o < c.d_out; ++o) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += t[q] * d.b[a][o * r + q];
      res.y[i * c.d_out + o] += s * acc;
      for (int q = 0; q < r; ++q) res.db[a][o * r + q] += s * double(d.dy[i * c.d_out + o]) * t[q];
    }
    for (int kk = 0; kk < c.d_in; ++kk) {
      double acc = 0;
      for (int q = 0; q < r; ++q) acc += u[q] * d.a[a][q * c.d_in + kk];
      res.dx[i * c.d_in + kk] += acc;
      for (int q = 0; q < r; ++q) res.da[a][q * c.d_in + kk] += u[q] * double(d.x[i * c.d_in + kk]);
    }
  }
  return res;
}

// The adapters, their gradients and the segments on the device.
struct DevLora {
  std::vector<Dev<float>> a, b, da, db;
  Dev<k::LoraAdapterF32> adapters;
  Dev<k::LoraGradF32> grads;
  Dev<k::LoraSegment> segments;
  int num_segments = 0, rank_stride = 1;
  DevLora(const std::vector<std::vector<float>>& ha, const std::vector<std::vector<float>>& hb,
          const std::vector<std::vector<float>>& hda, const std::vector<std::vector<float>>& hdb,
          const std::vector<int>& ranks, const std::vector<float>& scales, const std::vector<std::int32_t>& slots) {
    std::vector<k::LoraAdapterF32> table;
    std::vector<k::LoraGradF32> gtable;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      a.emplace_back(ha[i]);
      b.emplace_back(hb[i]);
      if (!hda.empty()) {
        da.emplace_back(hda[i]);
        db.emplace_back(hdb[i]);
      }
      table.push_back({a.back().p, b.back().p, ranks[i], scales[i]});
      if (!hda.empty()) gtable.push_back({da.back().p, db.back().p});
      rank_stride = std::max(rank_stride, ranks[i]);
    }
    adapters = Dev<k::LoraAdapterF32>(table);
    grads = Dev<k::LoraGradF32>(gtable);
    std::vector<k::LoraSegment> segs;
    if (!k::lora_build_segments(slots.data(), static_cast<int>(slots.size()), static_cast<int>(ranks.size()), segs)) {
      throw std::runtime_error("lora_build_segments refused the slots");
    }
    num_segments = static_cast<int>(segs.size());
    segments = Dev<k::LoraSegment>(segs);
  }
};

void check_lora() {
  std::vector<LoraCase> cases;
  cases.push_back({"mixed 40x24 ranks 1/3/8", 40, 24, {1, 3, 8},
                   {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 2, -1, 1, 1, 1, 2, 0, 2, 2, 2, -1}});
  cases.push_back({"tiles 300x130 ranks 64/5", 300, 130, {64, 5}, {1, 0, 0, 0, -1, 1, 1, 0}});
  cases.push_back({"no adapter rows", 40, 24, {3}, {-1, -1, -1}});
  std::vector<std::int32_t> large_slots;
  for (int i = 0; i < 40; ++i) large_slots.push_back(i < 20 ? 0 : i % 4 - 1);
  cases.push_back({"large 1024x768 ranks 64/16/8", 1024, 768, {64, 16, 8}, large_slots});
  for (const auto& c : cases) {
    const std::uint64_t seed = 1234 + static_cast<std::uint64_t>(c.d_in);
    const LoraData d = lora_data(c, seed, false);
    const LoraResult want = lora_reference(c, d), scale = lora_reference(c, lora_data(c, seed, true));
    const int n = static_cast<int>(c.slots.size());
    DevLora dl(d.a, d.b, d.da0, d.db0, c.ranks, d.scales, c.slots);
    Dev<float> x(d.x), dy(d.dy), y(d.y0), dx(d.dx0);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Dev<float> fwd(std::vector<float>(k::lora_forward_workspace_floats(n, c.d_in, dl.rank_stride), nan));
    Dev<float> bwd(std::vector<float>(k::lora_backward_workspace_floats(n, c.d_in, c.d_out, dl.rank_stride), nan));
    CK(ot_cuda_lora_forward_f32(x.p, y.p, n, c.d_in, c.d_out, dl.segments.p, dl.num_segments, dl.adapters.p,
                                dl.rank_stride, fwd.p, nullptr));
    CK(ot_cuda_lora_backward_f32(x.p, dy.p, dx.p, n, c.d_in, c.d_out, dl.segments.p, dl.num_segments, dl.adapters.p,
                                 dl.grads.p, dl.rank_stride, bwd.p, nullptr));
    auto cmp = [&](const std::string& opname, const std::vector<float>& got, const std::vector<double>& ref,
                   const std::vector<double>& mag, const std::string& what) {
      Worst w;
      for (std::size_t i = 0; i < ref.size(); ++i) w.add(got[i], ref[i], mag[i], i);
      expect(opname, w, 1e-5, std::string("lora ") + c.name + " " + what);
    };
    cmp("lora_forward", y.get(), want.y, scale.y, "y");
    cmp("lora_backward", dx.get(), want.dx, scale.dx, "dx");
    for (std::size_t a = 0; a < c.ranks.size(); ++a) {
      cmp("lora_backward", dl.da[a].get(), want.da[a], scale.da[a], "dA[" + std::to_string(a) + "]");
      cmp("lora_backward", dl.db[a].get(), want.db[a], scale.db[a], "dB[" + std::to_string(a) + "]");
    }
  }
}

#ifdef OT_DC_ATTENTION
void check_paged_attention();  // below, beside its figure
#endif

const std::vector<std::pair<std::string, std::function<void()>>>& op_checks() {
  static const std::vector<std::pair<std::string, std::function<void()>>> checks{
      {"rmsnorm", check_rmsnorm},       {"rmsnorm_backward", check_rmsnorm_backward},
      {"rope", check_rope},             {"swiglu", check_swiglu},
      {"embedding", check_embedding},   {"adamw", check_adamw},
      {"sum_of_squares", check_sum_of_squares}, {"gemm_bf16", check_gemm_bf16},
      {"lora", check_lora},
#ifdef OT_DC_ATTENTION
      {"paged_attention", check_paged_attention},
#endif
  };
  return checks;
}

// ---------------------------------------------------------------- figures

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

// Deterministic pseudo-random values in [-1, 1) (bf16 bits or f32), filled on the device.
__device__ float hash_unit(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / 8388608.0f - 1.0f;
}
__global__ void fill_bf16_kernel(std::uint16_t* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = hash_unit(i, seed) * scale;
    std::uint32_t u = __float_as_uint(v);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = static_cast<std::uint16_t>(u >> 16);
  }
}
__global__ void fill_f32_kernel(float* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    p[i] = hash_unit(i, seed) * scale;
  }
}

// Mean milliseconds per call of fn over `iters` calls after `warmup`, CUDA events on the default stream.
double time_ms(const std::function<void()>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  CK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  CK(cudaEventRecord(start, nullptr));
  for (int i = 0; i < iters; ++i) fn();
  CK(cudaEventRecord(stop, nullptr));
  CK(cudaEventSynchronize(stop));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / iters;
}

Obj bench_copy(double peak_gbs) {
  const std::size_t bytes = std::size_t{1} << 30;  // 1 GiB read + 1 GiB written per copy
  const std::size_t n = bytes / sizeof(float4);
  Dev<float4> src(n), dst(n);
  CK(cudaMemset(src.p, 0, bytes));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double ms = time_ms(
      [&] {
        copy_kernel<<<sms * 8, 512>>>(src.p, dst.p, n);
        CK(cudaGetLastError());
      },
      3, 20);
  const double gbs = 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
  Obj o;
  o.num("bytes_per_copy", double(bytes)).num("ms", ms).num("gb_s", gbs);
  if (peak_gbs > 0) o.num("fraction_of_peak", gbs / peak_gbs);
  return o;
}

// Spot check of a big bf16 product (f32 out) at sampled elements against float64.
std::string spot_check(const Dev<std::uint16_t>& x, const Dev<std::uint16_t>& w, const Dev<float>& y, int m, int n, int kk) {
  const auto hx = x.get(), hw = w.get();
  const auto hy = y.get();
  std::mt19937_64 rng(99);
  double worst = 0;
  for (int s = 0; s < 256; ++s) {
    const int r = static_cast<int>(rng() % m), c = static_cast<int>(rng() % n);
    double acc = 0, mag = 0;
    for (int i = 0; i < kk; ++i) {
      const double p = from_bf16(hx[std::size_t(r) * kk + i]) * from_bf16(hw[std::size_t(c) * kk + i]);
      acc += p;
      mag += std::abs(p);
    }
    const double bound = kk * std::ldexp(1.0, -24) * mag;
    const double e = std::abs(double(hy[std::size_t(r) * n + c]) - acc) / std::max(bound, 1e-30);
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  // <= 1: within f32 accumulation error over the same bf16 inputs.
  return worst <= 1.0 ? "" : "error / f32 accumulation bound " + json_num(worst) + " > 1 on sampled elements";
}

void fill(Dev<std::uint16_t>& d, std::uint32_t seed, float scale) {
  fill_bf16_kernel<<<1024, 256>>>(d.p, d.n, seed, scale);
  CK(cudaGetLastError());
}
void fill(Dev<float>& d, std::uint32_t seed, float scale) {
  fill_f32_kernel<<<1024, 256>>>(d.p, d.n, seed, scale);
  CK(cudaGetLastError());
}

#ifdef OT_DC_ATTENTION
__global__ void __launch_bounds__(k::kAttnThreads) dc_paged_attention_kernel(const k::PagedAttentionParams p) {
  ot_cuda::DeviceCtx ctx;
  k::paged_attention(ctx, p);
}

// grid = (rows, kv heads), as attention.cu's launcher.
void dc_paged_attention(const k::PagedAttentionParams& p, int n_rows) {
  if (!k::paged_attention_supports(p.num_heads, p.num_kv_heads, p.head_dim)) {
    throw std::runtime_error("paged_attention does not support this head shape");
  }
  dc_paged_attention_kernel<<<dim3(static_cast<unsigned>(n_rows), static_cast<unsigned>(p.num_kv_heads)),
                              k::kAttnThreads,
                              k::paged_attention_shared_bytes(p.num_heads / p.num_kv_heads, p.head_dim)>>>(p);
  CK(cudaGetLastError());
}

// A paged cache of `seqs` sequences with the given lengths, physical blocks in
// a scrambled order; one decode row per sequence at its last position.
struct AttnSetup {
  int heads, kv_heads, head_dim, block_size, max_blocks;
  std::vector<int> lens;
  std::vector<std::int32_t> tables, row_seq, row_pos;
  int num_blocks = 0;
  AttnSetup(int h, int kvh, int d, int bs, std::vector<int> l)
      : heads(h), kv_heads(kvh), head_dim(d), block_size(bs), lens(std::move(l)) {
    max_blocks = 1;
    for (const int len : lens) max_blocks = std::max(max_blocks, (len + bs - 1) / bs);
    const int seqs = static_cast<int>(lens.size());
    num_blocks = seqs * max_blocks;
    tables.resize(std::size_t(seqs) * max_blocks);
    for (int i = 0; i < seqs * max_blocks; ++i) tables[i] = (i * 7919 + 13) % num_blocks;  // 7919 prime: a permutation
    for (int s = 0; s < seqs; ++s) {
      row_seq.push_back(s);
      row_pos.push_back(lens[s] - 1);
    }
  }
  std::size_t cache_floats() const { return std::size_t(num_blocks) * block_size * kv_heads * head_dim; }
};

void check_paged_attention() {
  struct Shape {
    int heads, kv_heads, head_dim, block_size;
    std::vector<int> lens;
  };
  for (const Shape& sh : std::vector<Shape>{{8, 2, 64, 16, {1, 37, 100}}, {4, 4, 128, 8, {9, 64}}, {8, 1, 40, 16, {33}}}) {
    const AttnSetup a(sh.heads, sh.kv_heads, sh.head_dim, sh.block_size, sh.lens);
    const int rows = static_cast<int>(sh.lens.size());
    const auto kc = random_floats(a.cache_floats(), -1.0f, 1.0f, 70 + a.cache_floats());
    const auto vc = random_floats(a.cache_floats(), -1.0f, 1.0f, 71 + a.cache_floats());
    const auto q = random_floats(std::size_t(rows) * sh.heads * sh.head_dim, -1.0f, 1.0f, 72);
    const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    Dev<float> dk(kc), dv(vc), dq(q), dout(nan_floats(q.size()));
    Dev<std::int32_t> dseq(a.row_seq), dpos(a.row_pos), dtab(a.tables);
    k::PagedAttentionParams p{};
    p.q = dq.p;
    p.out = dout.p;
    p.row_seq = dseq.p;
    p.row_pos = dpos.p;
    p.block_tables = dtab.p;
    p.max_blocks_per_seq = a.max_blocks;
    p.key_cache = dk.p;
    p.value_cache = dv.p;
    p.block_size = sh.block_size;
    p.num_heads = sh.heads;
    p.num_kv_heads = sh.kv_heads;
    p.head_dim = sh.head_dim;
    p.scale = scale;
    dc_paged_attention(p, rows);
    const auto out = dout.get();
    Worst w;
    const int group = sh.heads / sh.kv_heads, d = sh.head_dim;
    for (int i = 0; i < rows; ++i) {
      const int s = a.row_seq[i], pos = a.row_pos[i];
      for (int h = 0; h < sh.heads; ++h) {
        const int g = h / group;
        auto at = [&](int t) {
          const int phys = a.tables[std::size_t(s) * a.max_blocks + t / sh.block_size];
          return ((std::size_t(phys) * sh.block_size + t % sh.block_size) * sh.kv_heads + g) * d;
        };
        std::vector<double> sc(pos + 1);
        double mx = -INFINITY;
        for (int t = 0; t <= pos; ++t) {
          double dot = 0;
          for (int c = 0; c < d; ++c) dot += double(q[(std::size_t(i) * sh.heads + h) * d + c]) * kc[at(t) + c];
          sc[t] = double(scale) * dot;
          mx = std::max(mx, sc[t]);
        }
        double sum = 0;
        for (auto& v : sc) sum += (v = std::exp(v - mx));
        for (int c = 0; c < d; ++c) {
          double ref = 0, mag = 0;
          for (int t = 0; t <= pos; ++t) {
            ref += sc[t] / sum * vc[at(t) + c];
            mag += sc[t] / sum * std::abs(vc[at(t) + c]);
          }
          const std::size_t o = (std::size_t(i) * sh.heads + h) * d + c;
          w.add(out[o], ref, mag, o);
        }
      }
    }
    expect("paged_attention", w, 1e-5,
           "paged_attention heads " + std::to_string(sh.heads) + "/" + std::to_string(sh.kv_heads) + " d " +
               std::to_string(sh.head_dim) + " block " + std::to_string(sh.block_size));
  }
}

// Decode: 64 sequences of 4096 cached tokens, 32 query / 8 kv heads of 128, f32
// cache, block 16: the bytes of K and V read once per step over the time.
Obj bench_attention_decode(double peak_gbs) {
  const int seqs = 64, len = 4096;
  const AttnSetup a(32, 8, 128, 16, std::vector<int>(seqs, len));
  Dev<float> kc(a.cache_floats()), vc(a.cache_floats()), q(std::size_t(seqs) * 32 * 128), out(q.n);
  fill(kc, 6, 1.0f);
  fill(vc, 7, 1.0f);
  fill(q, 8, 1.0f);
  Dev<std::int32_t> dseq(a.row_seq), dpos(a.row_pos), dtab(a.tables);
  k::PagedAttentionParams p{};
  p.q = q.p;
  p.out = out.p;
  p.row_seq = dseq.p;
  p.row_pos = dpos.p;
  p.block_tables = dtab.p;
  p.max_blocks_per_seq = a.max_blocks;
  p.key_cache = kc.p;
  p.value_cache = vc.p;
  p.block_size = a.block_size;
  p.num_heads = a.heads;
  p.num_kv_heads = a.kv_heads;
  p.head_dim = a.head_dim;
  p.scale = 1.0f / std::sqrt(128.0f);
  const double ms = time_ms([&] { dc_paged_attention(p, seqs); }, 3, 10);
  const double bytes = 2.0 * double(seqs) * len * a.kv_heads * a.head_dim * sizeof(float);
  Obj o;
  o.str("shape", "64 seqs x 4096 tokens, 32/8 heads x 128, f32 cache, block 16")
      .num("kv_bytes", bytes)
      .num("ms", ms)
      .num("gb_s", bytes / (ms * 1e-3) / 1e9);
  if (peak_gbs > 0) o.num("fraction_of_peak", bytes / (ms * 1e-3) / 1e9 / peak_gbs);
  return o;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  bool probe = false, ops_only = false;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--probe") {
      probe = true;
    } else if (a == "--ops-only") {
      ops_only = true;
    } else if (a == "--ops" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string t; std::getline(ss, t, ',');) only.insert(t);
    } else {
      std::fprintf(stderr, "device_check: unknown argument %s (--probe, --ops-only, --ops a,b)\n", a.c_str());
      return 2;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  Obj line;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    line.raw("device", "null")
        .str("reason", e != cudaSuccess ? err_line(e) : "no CUDA device (cudaGetDeviceCount returned 0)");
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    line.num("cuda_runtime", runtime);
    std::printf("%s\n", line.dump().c_str());
    return probe ? 0 : 3;
  }
  cudaDeviceProp prop{};
  int mem_khz = 0, bus_bits = 0, runtime = 0, driver = 0;
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  // Peak HBM bandwidth: memory clock × bus width × 2 (double data rate).
  const double peak_gbs = mem_khz > 0 && bus_bits > 0 ? double(mem_khz) * 1e3 * (bus_bits / 8.0) * 2.0 / 1e9 : 0.0;
  line.str("device", prop.name)
      .str("cc", std::to_string(prop.major) + "." + std::to_string(prop.minor))
      .num("sms", prop.multiProcessorCount)
      .num("memory_gib", double(prop.totalGlobalMem) / (1 << 30))
      .num("cuda_runtime", runtime)
      .num("cuda_driver", driver);
  if (peak_gbs > 0) {
    line.num("peak_hbm_gb_s", peak_gbs).num("memory_clock_khz", mem_khz).num("bus_width_bits", bus_bits);
  } else {
    line.str("peak_hbm_gb_s", "not reported (cudaDevAttrMemoryClockRate / GlobalMemoryBusWidth are 0)");
  }
  if (probe) {
    line.boolean("probe", true);
    std::printf("%s\n", line.dump().c_str());
    return 0;
  }

  // The op checks.
  for (const auto& [name, fn] : op_checks()) {
    if (!only.empty() && !only.count(name)) continue;
    try {
      fn();
      CK(cudaDeviceSynchronize());
    } catch (const std::exception& ex) {
      fail_op(name, std::string("CUDA error: ") + ex.what());
      cudaGetLastError();  // clear a sticky-free error; a sticky one fails what follows too
    }
  }
  if (!ops_only) {
    Obj fig;
    try {
      fig.raw("copy", bench_copy(peak_gbs).dump());
    } catch (const std::exception& ex) {
      fig.str("copy", std::string("error: ") + ex.what());
    }

    // cuBLASLt and our GEMM, bf16 in, f32 out, 4096³.
    auto opened = ot_cuda::blaslt::Blaslt::open();
    const std::size_t ws_bytes = std::size_t{32} << 20;
    std::unique_ptr<Dev<unsigned char>> workspace;
    auto blaslt_gemm = [&](const void* a, const void* b, void* c, int m, int n, int kk) {
      ot_cuda::blaslt::Gemm g;
      g.dtype = ot_cuda::blaslt::DType::bf16;
      g.m = m;
      g.n = n;
      g.k = kk;
      g.a = a;
      g.b = b;
      g.c = c;
      g.workspace = workspace->p;
      g.workspace_bytes = ws_bytes;
      const auto s = opened.blaslt->gemm(g);
      if (!s.ok()) throw std::runtime_error(s.error);
    };
    try {
      const int m = 4096, n = 4096, kk = 4096;
      const double flop = 2.0 * m * n * kk;
      Dev<std::uint16_t> x(std::size_t(m) * kk), w(std::size_t(n) * kk);
      Dev<float> y(std::size_t(m) * n);
      fill(x, 1, 1.0f);
      fill(w, 2, 1.0f);
      if (opened) {
        workspace = std::make_unique<Dev<unsigned char>>(ws_bytes);
        Obj o;
        o.str("library", opened.blaslt->library_path()).num("version", double(opened.blaslt->version()));
        try {
          const double ms = time_ms([&] { blaslt_gemm(x.p, w.p, y.p, m, n, kk); }, 3, 20);
          o.num("ms", ms).num("tflops", flop / (ms * 1e-3) / 1e12);
          const std::string bad = spot_check(x, w, y, m, n, kk);
          o.boolean("spot_check_pass", bad.empty());
          if (!bad.empty()) {
            o.str("spot_check", bad);
            fail_op("cublaslt_bf16_4096", bad);
          } else {
            op("cublaslt_bf16_4096").cases++;
          }
        } catch (const std::exception& ex) {
          o.str("error", ex.what());
          fail_op("cublaslt_bf16_4096", ex.what());
        }
        fig.raw("cublaslt_bf16_4096", o.dump());
      } else {
        fig.str("cublaslt_bf16_4096", "skipped: " + opened.error);
      }
      Obj ours;
      const double ms = time_ms([&] { CK(ot_cuda_gemm_bf16_xwt(x.p, w.p, y.p, m, n, kk, nullptr)); }, 2, 10);
      ours.num("ms", ms).num("tflops", flop / (ms * 1e-3) / 1e12);
      const std::string bad = spot_check(x, w, y, m, n, kk);
      ours.boolean("spot_check_pass", bad.empty());
      if (!bad.empty()) {
        ours.str("spot_check", bad);
        fail_op("gemm_bf16_4096", bad);
      } else {
        op("gemm_bf16_4096").cases++;
      }
      fig.raw("gemm_bf16_4096", ours.dump());
    } catch (const std::exception& ex) {
      fig.str("gemm_bf16_4096", std::string("error: ") + ex.what());
      fail_op("gemm_bf16_4096", ex.what());
    }

    // Multi-LoRA overhead: base product (cuBLASLt bf16 if it loaded, else ours)
    // of 512 prefill + 64 decode rows, hidden 4096; then the LoRA forward
    // (rank 16, f32) for 1, 8, 32 adapters. Prefill rows in one contiguous run
    // per adapter; decode rows cycle through the adapters.
    try {
      const int hidden = 4096, prefill = 512, decode = 64, rows = prefill + decode, rank = 16;
      Dev<std::uint16_t> xb(std::size_t(rows) * hidden), wb(std::size_t(hidden) * hidden);
      Dev<float> xf(std::size_t(rows) * hidden), y(std::size_t(rows) * hidden);
      fill(xb, 3, 1.0f);
      fill(wb, 4, 1.0f);
      fill(xf, 5, 1.0f);
      const bool use_lt = opened && workspace;
      auto base = [&] {
        if (use_lt) {
          blaslt_gemm(xb.p, wb.p, y.p, rows, hidden, hidden);
        } else {
          CK(ot_cuda_gemm_bf16_xwt(xb.p, wb.p, y.p, rows, hidden, hidden, nullptr));
        }
      };
      const double base_ms = time_ms(base, 3, 50);
      Obj o;
      o.str("base", use_lt ? "cublaslt bf16" : "gemm_bf16 (ours)").num("rows_prefill", prefill).num("rows_decode", decode)
          .num("hidden", hidden).num("rank", rank).num("base_ms", base_ms);
      for (const int adapters : {1, 8, 32}) {
        std::vector<std::int32_t> slots(rows);
        for (int i = 0; i < prefill; ++i) slots[i] = i * adapters / prefill;
        for (int i = 0; i < decode; ++i) slots[prefill + i] = i % adapters;
        std::vector<std::vector<float>> ha, hb;
        std::vector<int> ranks(adapters, rank);
        std::vector<float> scales(adapters, 2.0f);
        for (int a = 0; a < adapters; ++a) {
          ha.push_back(random_floats(std::size_t(rank) * hidden, -0.02f, 0.02f, 100 + a));
          hb.push_back(random_floats(std::size_t(hidden) * rank, -0.02f, 0.02f, 200 + a));
        }
        DevLora dl(ha, hb, {}, {}, ranks, scales, slots);
        Dev<float> ws(k::lora_forward_workspace_floats(rows, hidden, dl.rank_stride));
        auto lora = [&] {
          CK(ot_cuda_lora_forward_f32(xf.p, y.p, rows, hidden, hidden, dl.segments.p, dl.num_segments, dl.adapters.p,
                                      dl.rank_stride, ws.p, nullptr));
        };
        const double lora_ms = time_ms(lora, 3, 50);
        const double both_ms = time_ms(
            [&] {
              base();
              lora();
            },
            3, 50);
        Obj a;
        a.num("segments", dl.num_segments).num("lora_ms", lora_ms).num("base_plus_lora_ms", both_ms)
            .num("overhead", lora_ms / base_ms);
        o.raw(std::to_string(adapters), a.dump());
      }
      fig.raw("multi_lora", o.dump());
    } catch (const std::exception& ex) {
      fig.str("multi_lora", std::string("error: ") + ex.what());
    }
#ifdef OT_DC_ATTENTION
    try {
      fig.raw("attention_decode", bench_attention_decode(peak_gbs).dump());
    } catch (const std::exception& ex) {
      fig.str("attention_decode", std::string("error: ") + ex.what());
    }
#else
    fig.str("attention_decode", "skipped: no attention kernel yet");
#endif
    line.raw("figures", fig.dump());
  }
  bool all_ok = true;
  Obj ops;
  for (const auto& name : g_op_order) {
    const OpResult& r = g_ops[name];
    all_ok = all_ok && r.ok();
    Obj o;
    o.boolean("pass", r.ok()).num("cases", r.cases).num("worst_error", r.worst_err).num("tol", r.tol);
    if (!r.ok()) o.str("failure", r.failure);
    ops.raw(name, o.dump());
  }
  line.boolean("ops_pass", all_ok).raw("ops", ops.dump());

  line.num("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::printf("%s\n", line.dump().c_str());
  return all_ok ? 0 : 1;
}
