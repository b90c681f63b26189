// JS bindings of the token log-probability ops (plain and fused with the
// unembedding). Targets are range-checked against the vocabulary before any
// kernel reads a logit.
#include <string>

#include "common.h"
#include "loss.h"
#include "ops.h"

namespace ot {
namespace {

// Sizes are capped so that a product of two fits int64: a length check can never
// be fooled by an overflowed product.
constexpr int64_t kMaxDim = INT64_C(1) << 31;

// logSoftmaxGather(logits, targets, logprobs, lse, n, vocab)
//   logprobs[i] = logits[i, targets[i]] − lse[i], lse[i] = log Σ_j exp(logits[i, j]).
Napi::Value LogSoftmaxGather(const Napi::CallbackInfo& info) {
  Args a{info, "logSoftmaxGather"};
  a.expect_count(6);
  const int64_t n = a.dim(4, "n", 0, kMaxDim);
  const int64_t vocab = a.dim(5, "vocab", 1, kMaxDim);
  const float* logits = a.f32(0, "logits", n * vocab);
  const int32_t* targets = a.i32(1, "targets", n);
  float* logprobs = a.f32(2, "logprobs", n);
  float* lse = a.f32(3, "lse", n);
  check_indices(a, "targets", targets, n, 0, vocab);
  log_softmax_gather(n, vocab, logits, targets, logprobs, lse);
  return info.Env().Undefined();
}

// logSoftmaxGatherBackward(logits, targets, lse, dLogprobs, dLogits, n, vocab)
//   dLogits[i, j] = dLogprobs[i] · (1[j = targets[i]] − softmax(logits)[i, j]), overwritten.
Napi::Value LogSoftmaxGatherBackward(const Napi::CallbackInfo& info) {
  Args a{info, "logSoftmaxGatherBackward"};
  a.expect_count(7);
  const int64_t n = a.dim(5, "n", 0, kMaxDim);
  const int64_t vocab = a.dim(6, "vocab", 1, kMaxDim);
  const float* logits = a.f32(0, "logits", n * vocab);
  const int32_t* targets = a.i32(1, "targets", n);
  const float* lse = a.f32(2, "lse", n);
  const float* d_logprobs = a.f32(3, "dLogprobs", n);
  float* d_logits = a.f32(4, "dLogits", n * vocab);
  check_indices(a, "targets", targets, n, 0, vocab);
  log_softmax_gather_backward(n, vocab, logits, targets, lse, d_logprobs, d_logits);
  return info.Env().Undefined();
}

UnembedShape unembed_shape(const Args& a, size_t first) {
  UnembedShape s;
  s.n = a.dim(first, "n", 0, kMaxDim);
  s.d = a.dim(first + 1, "d", 1, kMaxDim);
  s.vocab = a.dim(first + 2, "vocab", 1, kMaxDim);
  s.row_block = a.dim(first + 3, "rowBlock", 1, kMaxDim);
  s.vocab_block = a.dim(first + 4, "vocabBlock", 1, kMaxDim);
  return s;
}

// unembedLogprobs(hidden, w, targets, logprobs, lse, n, d, vocab, rowBlock, vocabBlock)
//   As logSoftmaxGather over logits = hidden [n, d] · w [vocab, d]ᵀ, computed one
//   [rowBlock, vocabBlock] tile at a time.
Napi::Value UnembedLogprobs(const Napi::CallbackInfo& info) {
  Args a{info, "unembedLogprobs"};
  a.expect_count(10);
  const UnembedShape s = unembed_shape(a, 5);
  const float* hidden = a.f32(0, "hidden", s.n * s.d);
  const float* w = a.f32(1, "w", s.vocab * s.d);
  const int32_t* targets = a.i32(2, "targets", s.n);
  float* logprobs = a.f32(3, "logprobs", s.n);
  float* lse = a.f32(4, "lse", s.n);
  check_indices(a, "targets", targets, s.n, 0, s.vocab);
  unembed_logprobs(s, hidden, w, targets, logprobs, lse);
  return info.Env().Undefined();
}

// unembedLogprobsBackward(hidden, w, targets, lse, dLogprobs, dHidden, dW | null, n, d, vocab, rowBlock,
//                         vocabBlock)
//   dHidden [n, d] += and dW [vocab, d] += the gradients of Σ dLogprobs ⊙ logprobs.
Napi::Value UnembedLogprobsBackward(const Napi::CallbackInfo& info) {
  Args a{info, "unembedLogprobsBackward"};
  a.expect_count(12);
  const UnembedShape s = unembed_shape(a, 7);
  const float* hidden = a.f32(0, "hidden", s.n * s.d);
  const float* w = a.f32(1, "w", s.vocab * s.d);
  const int32_t* targets = a.i32(2, "targets", s.n);
  const float* lse = a.f32(3, "lse", s.n);
  const float* d_logprobs = a.f32(4, "dLogprobs", s.n);
  float* d_hidden = a.f32(5, "dHidden", s.n * s.d);
  float* d_w = a.is_null(6) ? nullptr : a.f32(6, "dW", s.vocab * s.d);
  check_indices(a, "targets", targets, s.n, 0, s.vocab);
  unembed_logprobs_backward(s, hidden, w, targets, lse, d_logprobs, d_hidden, d_w);
  return info.Env().Undefined();
}

}  // namespace

void register_loss(Napi::Env env, Napi::Object exports) {
  exports.Set("logSoftmaxGather", Napi::Function::New(env, LogSoftmaxGather, "logSoftmaxGather"));
  exports.Set("logSoftmaxGatherBackward", Napi::Function::New(env, LogSoftmaxGatherBackward, "logSoftmaxGatherBackward"));
  exports.Set("unembedLogprobs", Napi::Function::New(env, UnembedLogprobs, "unembedLogprobs"));
  exports.Set("unembedLogprobsBackward", Napi::Function::New(env, UnembedLogprobsBackward, "unembedLogprobsBackward"));
}

}  // namespace ot
