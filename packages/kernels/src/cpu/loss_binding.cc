// JS bindings of the token log-probability ops (plain and fused with the
// unembedding). Targets are range-checked against the vocabulary before any
// kernel reads a logit.
#include "common.h"
#include "loss.h"
#include "ops.h"

namespace ot {
namespace {

/** Logits [n, vocab] at 0 and their targets [n] at 1; n and vocab at `first`, `first` + 1. */
struct Logits {
  int64_t n, vocab;
  const float* logits;
  const int32_t* targets;
};

Logits logits_arg(const Args& a, size_t first) {
  Logits l{a.dim(first, "n", 0, kMaxDim), a.dim(first + 1, "vocab", 1, kMaxDim), nullptr, nullptr};
  l.logits = a.f32(0, "logits", l.n * l.vocab);
  l.targets = a.i32(1, "targets", l.n);
  return l;
}

// logSoftmaxGather(logits, targets, logprobs, lse, n, vocab)
//   logprobs[i] = logits[i, targets[i]] − lse[i], lse[i] = log Σ_j exp(logits[i, j]).
void LogSoftmaxGather(const Args& a) {
  const Logits l = logits_arg(a, 4);
  float* logprobs = a.f32(2, "logprobs", l.n);
  float* lse = a.f32(3, "lse", l.n);
  check_indices(a, "targets", l.targets, l.n, 0, l.vocab);
  log_softmax_gather(l.n, l.vocab, l.logits, l.targets, logprobs, lse);
}

// logSoftmaxGatherBackward(logits, targets, lse, dLogprobs, dLogits, n, vocab)
//   dLogits[i, j] = dLogprobs[i] · (1[j = targets[i]] − softmax(logits)[i, j]), overwritten.
void LogSoftmaxGatherBackward(const Args& a) {
  const Logits l = logits_arg(a, 5);
  const float* lse = a.f32(2, "lse", l.n);
  const float* d_logprobs = a.f32(3, "dLogprobs", l.n);
  float* d_logits = a.f32(4, "dLogits", l.n * l.vocab);
  check_indices(a, "targets", l.targets, l.n, 0, l.vocab);
  log_softmax_gather_backward(l.n, l.vocab, l.logits, l.targets, lse, d_logprobs, d_logits);
}

/** The fused ops' shape (n, d, vocab, rowBlock, vocabBlock from `first`) and hidden, w, targets at 0..2. */
struct Unembed {
  UnembedShape s;
  const float* hidden;
  const float* w;
  const int32_t* targets;
};

Unembed unembed_arg(const Args& a, size_t first) {
  Unembed u{};
  u.s.n = a.dim(first, "n", 0, kMaxDim);
  u.s.d = a.dim(first + 1, "d", 1, kMaxDim);
  u.s.vocab = a.dim(first + 2, "vocab", 1, kMaxDim);
  u.s.row_block = a.dim(first + 3, "rowBlock", 1, kMaxDim);
  u.s.vocab_block = a.dim(first + 4, "vocabBlock", 1, kMaxDim);
  u.hidden = a.f32(0, "hidden", u.s.n * u.s.d);
  u.w = a.f32(1, "w", u.s.vocab * u.s.d);
  u.targets = a.i32(2, "targets", u.s.n);
  return u;
}

// unembedLogprobs(hidden, w, targets, logprobs, lse, n, d, vocab, rowBlock, vocabBlock)
//   As logSoftmaxGather over logits = hidden [n, d] · w [vocab, d]ᵀ, computed one
//   [rowBlock, vocabBlock] tile at a time.
void UnembedLogprobs(const Args& a) {
  const Unembed u = unembed_arg(a, 5);
  float* logprobs = a.f32(3, "logprobs", u.s.n);
  float* lse = a.f32(4, "lse", u.s.n);
  check_indices(a, "targets", u.targets, u.s.n, 0, u.s.vocab);
  unembed_logprobs(u.s, u.hidden, u.w, u.targets, logprobs, lse);
}

// unembedLogprobsBackward(hidden, w, targets, lse, dLogprobs, dHidden, dW | null, n, d, vocab, rowBlock,
//                         vocabBlock)
//   dHidden [n, d] += and dW [vocab, d] += the gradients of Σ dLogprobs ⊙ logprobs.
void UnembedLogprobsBackward(const Args& a) {
  const Unembed u = unembed_arg(a, 7);
  const float* lse = a.f32(3, "lse", u.s.n);
  const float* d_logprobs = a.f32(4, "dLogprobs", u.s.n);
  float* d_hidden = a.f32(5, "dHidden", u.s.n * u.s.d);
  float* d_w = a.f32_or_null(6, "dW", u.s.vocab * u.s.d);
  check_indices(a, "targets", u.targets, u.s.n, 0, u.s.vocab);
  unembed_logprobs_backward(u.s, u.hidden, u.w, u.targets, lse, d_logprobs, d_hidden, d_w);
}

constexpr Op kOps[] = {
    {"logSoftmaxGather", 6, LogSoftmaxGather},
    {"logSoftmaxGatherBackward", 7, LogSoftmaxGatherBackward},
    {"unembedLogprobs", 10, UnembedLogprobs},
    {"unembedLogprobsBackward", 12, UnembedLogprobsBackward},
};

}  // namespace

void register_loss(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
