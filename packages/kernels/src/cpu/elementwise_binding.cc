// JS bindings of RMSNorm, RoPE, SwiGLU, the embedding gather / scatter-add and the adds.
// Every buffer is checked for type and exact length, every index for range,
// before a kernel runs.
#include <string>

#include "common.h"
#include "elementwise.h"
#include "ops.h"

namespace ot {
namespace {

constexpr int64_t kMaxHeads = INT64_C(1) << 12;
constexpr int64_t kMaxHeadDim = INT64_C(1) << 16;

/** A finite eps > 0 (eps = 0 would divide by zero on an all-zero row). */
float positive(const Args& a, size_t i, const char* name) {
  const float v = a.finite(i, name);
  if (!(v > 0.0f)) throw_range(a.env(), a.op, name, "must be > 0, got " + std::to_string(v));
  return v;
}

/** Rows [n, d] of a norm: n and d at `first`, `first` + 1, eps after them. */
struct NormShape {
  int64_t n, d;
  float eps;
};

NormShape norm_shape(const Args& a, size_t first) {
  return {a.dim(first, "n", 0, kMaxDim), a.dim(first + 1, "d", 1, kMaxDim), positive(a, first + 2, "eps")};
}

// rmsNorm(x, weight, out, invRms | null, n, d, eps)
//   out[n, d] = x · rsqrt(mean(x²) + eps) · weight; invRms [n] saved when given.
void RmsNorm(const Args& a) {
  const NormShape s = norm_shape(a, 4);
  const float* x = a.f32(0, "x", s.n * s.d);
  const float* w = a.f32(1, "weight", s.d);
  float* out = a.f32(2, "out", s.n * s.d);
  float* inv_rms = a.f32_or_null(3, "invRms", s.n);
  rmsnorm_forward(s.n, s.d, x, w, s.eps, out, inv_rms);
}

// rmsNormBackward(dOut, x, weight, invRms | null, dx, dWeight | null, n, d, eps, accumulate)
//   dx[n, d] = (accumulate: +=) the input gradient; dWeight[d] += the weight gradient.
void RmsNormBackward(const Args& a) {
  const NormShape s = norm_shape(a, 6);
  const bool accumulate = a.boolean(9, "accumulate");
  const float* d_out = a.f32(0, "dOut", s.n * s.d);
  const float* x = a.f32(1, "x", s.n * s.d);
  const float* w = a.f32(2, "weight", s.d);
  const float* inv_rms = a.f32_or_null(3, "invRms", s.n);
  float* dx = a.f32(4, "dx", s.n * s.d);
  float* dw = a.f32_or_null(5, "dWeight", s.d);
  rmsnorm_backward(s.n, s.d, x, w, inv_rms, s.eps, d_out, dx, accumulate, dw);
}

// rope(x, positions, invFreq, n, heads, headDim, attentionScaling, inverse)
//   Rotates x [n, heads, headDim] in place; invFreq has rotaryDim / 2 ≤ headDim / 2
//   entries (dimensions from rotaryDim on pass through).
void Rope(const Args& a) {
  const int64_t n = a.dim(3, "n", 0, kMaxDim);
  const int64_t heads = a.dim(4, "heads", 1, kMaxHeads);
  const int64_t head_dim = a.dim(5, "headDim", 2, kMaxHeadDim);
  if (head_dim % 2 != 0) throw_range(a.env(), a.op, "headDim", "must be even, got " + std::to_string(head_dim));
  const float scale = a.finite(6, "attentionScaling");
  const bool inverse = a.boolean(7, "inverse");
  float* x = a.f32(0, "x", n * heads * head_dim);
  const int32_t* positions = a.i32(1, "positions", n);
  check_indices(a, "positions", positions, n, 0, kMaxDim);
  const float* inv_freq = a.f32(2, "invFreq", -1);
  const int64_t rot_half = a.length_of(2);
  if (rot_half < 1 || rot_half > head_dim / 2) {
    throw_range(a.env(), a.op, "invFreq",
                "has length " + std::to_string(rot_half) + ", expected 1 to headDim / 2 = " + std::to_string(head_dim / 2));
  }
  rope_apply(n, heads, head_dim, x, positions, inv_freq, rot_half, scale, inverse);
}

// swiglu(gate, up, out): out = silu(gate) · up, all of gate's length.
void Swiglu(const Args& a) {
  const float* gate = a.f32(0, "gate", -1);
  const int64_t count = a.length_of(0);
  const float* up = a.f32(1, "up", count);
  float* out = a.f32(2, "out", count);
  swiglu_forward(count, gate, up, out);
}

// swigluBackward(dOut, gate, up, dGate, dUp): both gradients overwritten.
void SwigluBackward(const Args& a) {
  const float* d_out = a.f32(0, "dOut", -1);
  const int64_t count = a.length_of(0);
  const float* gate = a.f32(1, "gate", count);
  const float* up = a.f32(2, "up", count);
  float* d_gate = a.f32(3, "dGate", count);
  float* d_up = a.f32(4, "dUp", count);
  swiglu_backward(count, d_out, gate, up, d_gate, d_up);
}

/** ids [n] into a table [vocab, d]: the ids at 0, n, vocab and d at 3..5 (both embedding ops). */
struct Lookup {
  int64_t n, vocab, d;
  const int32_t* ids;
};

Lookup lookup(const Args& a) {
  Lookup l{a.dim(3, "n", 0, kMaxDim), a.dim(4, "vocab", 1, kMaxDim), a.dim(5, "d", 1, kMaxDim), nullptr};
  l.ids = a.i32(0, "ids", l.n);
  return l;
}

// embedding(ids, table, out, n, vocab, d): out[n, d] = table[ids[i], :].
void Embedding(const Args& a) {
  const Lookup l = lookup(a);
  const float* table = a.f32(1, "table", l.vocab * l.d);
  float* out = a.f32(2, "out", l.n * l.d);
  check_indices(a, "ids", l.ids, l.n, 0, l.vocab);
  embedding_forward(l.n, l.d, l.ids, table, out);
}

// embeddingBackward(ids, dOut, dTable, n, vocab, d): dTable[ids[i], :] += dOut[i, :].
void EmbeddingBackward(const Args& a) {
  const Lookup l = lookup(a);
  const float* d_out = a.f32(1, "dOut", l.n * l.d);
  float* d_table = a.f32(2, "dTable", l.vocab * l.d);
  check_indices(a, "ids", l.ids, l.n, 0, l.vocab);
  embedding_backward(l.n, l.d, l.ids, d_out, d_table);
}

// addInPlace(target, source): target += source, both the same length. source may
// be target itself (each element reads only its own), not a shifted view of it.
void AddInPlace(const Args& a) {
  float* target = a.f32(0, "target", -1);
  const int64_t count = a.length_of(0);
  const float* source = a.f32(1, "source", count);
  if (source != target && source < target + count && target < source + count)
    throw_range(a.env(), a.op, "source", "must not overlap target (other than being it)");
  add_in_place(count, target, source);
}

// addBias(y, bias, rows, d): y[rows, d] += bias[d] on every row.
void AddBias(const Args& a) {
  const int64_t rows = a.dim(2, "rows", 0, kMaxDim);
  const int64_t d = a.dim(3, "d", 1, kMaxDim);
  float* y = a.f32(0, "y", rows * d);
  const float* bias = a.f32(1, "bias", d);
  add_bias(rows, d, y, bias);
}

constexpr Op kOps[] = {
    {"rmsNorm", 7, RmsNorm},
    {"rmsNormBackward", 10, RmsNormBackward},
    {"rope", 8, Rope},
    {"swiglu", 3, Swiglu},
    {"swigluBackward", 5, SwigluBackward},
    {"embedding", 6, Embedding},
    {"embeddingBackward", 6, EmbeddingBackward},
    {"addInPlace", 2, AddInPlace},
    {"addBias", 4, AddBias},
};

}  // namespace

void register_elementwise(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
