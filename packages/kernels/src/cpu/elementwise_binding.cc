// JS bindings of RMSNorm, RoPE, SwiGLU and the embedding gather / scatter-add.
// Every buffer is checked for type and exact length, every index for range,
// before a kernel runs.
#include <string>

#include "common.h"
#include "elementwise.h"
#include "ops.h"

namespace ot {
namespace {

// Sizes are capped so that a product of two (or n · heads · headDim) fits int64:
// a length check can never be fooled by an overflowed product.
constexpr int64_t kMaxDim = INT64_C(1) << 31;
constexpr int64_t kMaxHeads = INT64_C(1) << 12;
constexpr int64_t kMaxHeadDim = INT64_C(1) << 16;

/** A finite eps > 0 (eps = 0 would divide by zero on an all-zero row). */
float positive(const Args& a, size_t i, const char* name) {
  const float v = a.finite(i, name);
  if (!(v > 0.0f)) throw_range(a.env(), a.op, name, "must be > 0, got " + std::to_string(v));
  return v;
}

// rmsNorm(x, weight, out, invRms | null, n, d, eps)
//   out[n, d] = x · rsqrt(mean(x²) + eps) · weight; invRms [n] saved when given.
Napi::Value RmsNorm(const Napi::CallbackInfo& info) {
  Args a{info, "rmsNorm"};
  a.expect_count(7);
  const int64_t n = a.dim(4, "n", 0, kMaxDim);
  const int64_t d = a.dim(5, "d", 1, kMaxDim);
  const float eps = positive(a, 6, "eps");
  const float* x = a.f32(0, "x", n * d);
  const float* w = a.f32(1, "weight", d);
  float* out = a.f32(2, "out", n * d);
  float* inv_rms = a.is_null(3) ? nullptr : a.f32(3, "invRms", n);
  rmsnorm_forward(n, d, x, w, eps, out, inv_rms);
  return info.Env().Undefined();
}

// rmsNormBackward(dOut, x, weight, invRms | null, dx, dWeight | null, n, d, eps, accumulate)
//   dx[n, d] = (accumulate: +=) the input gradient; dWeight[d] += the weight gradient.
Napi::Value RmsNormBackward(const Napi::CallbackInfo& info) {
  Args a{info, "rmsNormBackward"};
  a.expect_count(10);
  const int64_t n = a.dim(6, "n", 0, kMaxDim);
  const int64_t d = a.dim(7, "d", 1, kMaxDim);
  const float eps = positive(a, 8, "eps");
  const bool accumulate = a.boolean(9, "accumulate");
  const float* d_out = a.f32(0, "dOut", n * d);
  const float* x = a.f32(1, "x", n * d);
  const float* w = a.f32(2, "weight", d);
  const float* inv_rms = a.is_null(3) ? nullptr : a.f32(3, "invRms", n);
  float* dx = a.f32(4, "dx", n * d);
  float* dw = a.is_null(5) ? nullptr : a.f32(5, "dWeight", d);
  rmsnorm_backward(n, d, x, w, inv_rms, eps, d_out, dx, accumulate, dw);
  return info.Env().Undefined();
}

// rope(x, positions, invFreq, n, heads, headDim, attentionScaling, inverse)
//   Rotates x [n, heads, headDim] in place; invFreq has rotaryDim / 2 ≤ headDim / 2
//   entries (dimensions from rotaryDim on pass through).
Napi::Value Rope(const Napi::CallbackInfo& info) {
  Args a{info, "rope"};
  a.expect_count(8);
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
  return info.Env().Undefined();
}

// swiglu(gate, up, out): out = silu(gate) · up, all of gate's length.
Napi::Value Swiglu(const Napi::CallbackInfo& info) {
  Args a{info, "swiglu"};
  a.expect_count(3);
  const float* gate = a.f32(0, "gate", -1);
  const int64_t count = a.length_of(0);
  const float* up = a.f32(1, "up", count);
  float* out = a.f32(2, "out", count);
  swiglu_forward(count, gate, up, out);
  return info.Env().Undefined();
}

// swigluBackward(dOut, gate, up, dGate, dUp): both gradients overwritten.
Napi::Value SwigluBackward(const Napi::CallbackInfo& info) {
  Args a{info, "swigluBackward"};
  a.expect_count(5);
  const float* d_out = a.f32(0, "dOut", -1);
  const int64_t count = a.length_of(0);
  const float* gate = a.f32(1, "gate", count);
  const float* up = a.f32(2, "up", count);
  float* d_gate = a.f32(3, "dGate", count);
  float* d_up = a.f32(4, "dUp", count);
  swiglu_backward(count, d_out, gate, up, d_gate, d_up);
  return info.Env().Undefined();
}

// embedding(ids, table, out, n, vocab, d): out[n, d] = table[ids[i], :].
Napi::Value Embedding(const Napi::CallbackInfo& info) {
  Args a{info, "embedding"};
  a.expect_count(6);
  const int64_t n = a.dim(3, "n", 0, kMaxDim);
  const int64_t vocab = a.dim(4, "vocab", 1, kMaxDim);
  const int64_t d = a.dim(5, "d", 1, kMaxDim);
  const int32_t* ids = a.i32(0, "ids", n);
  const float* table = a.f32(1, "table", vocab * d);
  float* out = a.f32(2, "out", n * d);
  check_indices(a, "ids", ids, n, 0, vocab);
  embedding_forward(n, d, ids, table, out);
  return info.Env().Undefined();
}

// embeddingBackward(ids, dOut, dTable, n, vocab, d): dTable[ids[i], :] += dOut[i, :].
Napi::Value EmbeddingBackward(const Napi::CallbackInfo& info) {
  Args a{info, "embeddingBackward"};
  a.expect_count(6);
  const int64_t n = a.dim(3, "n", 0, kMaxDim);
  const int64_t vocab = a.dim(4, "vocab", 1, kMaxDim);
  const int64_t d = a.dim(5, "d", 1, kMaxDim);
  const int32_t* ids = a.i32(0, "ids", n);
  const float* d_out = a.f32(1, "dOut", n * d);
  float* d_table = a.f32(2, "dTable", vocab * d);
  check_indices(a, "ids", ids, n, 0, vocab);
  embedding_backward(n, d, ids, d_out, d_table);
  return info.Env().Undefined();
}

}  // namespace

void register_elementwise(Napi::Env env, Napi::Object exports) {
  exports.Set("rmsNorm", Napi::Function::New(env, RmsNorm, "rmsNorm"));
  exports.Set("rmsNormBackward", Napi::Function::New(env, RmsNormBackward, "rmsNormBackward"));
  exports.Set("rope", Napi::Function::New(env, Rope, "rope"));
  exports.Set("swiglu", Napi::Function::New(env, Swiglu, "swiglu"));
  exports.Set("swigluBackward", Napi::Function::New(env, SwigluBackward, "swigluBackward"));
  exports.Set("embedding", Napi::Function::New(env, Embedding, "embedding"));
  exports.Set("embeddingBackward", Napi::Function::New(env, EmbeddingBackward, "embeddingBackward"));
}

}  // namespace ot
