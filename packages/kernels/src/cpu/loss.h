// Token log-probabilities for next-token losses (DESIGN.md C6, C10), fp32,
// row-major. Cross-entropy of a token is −logprob; the RL losses use logprobs
// directly, so the ops return logprobs and take dL/dlogprob in the backward.
//
//   log_softmax_gather: logits [n, V] → logprob_i = logits[i, t_i] − lse_i,
//                       lse_i = log Σ_j exp(logits[i, j])
//   backward:           dLogits[i, j] = g_i · (1[j = t_i] − softmax_ij)
//   unembed_*:          the same with logits = hidden · Wᵀ computed one tile of
//                       [row_block, vocab_block] at a time (ot::gemm), reduced with
//                       a running (online) log-sum-exp, never materialised whole.
#pragma once

#include <cstdint>

namespace ot {

/** logprobs[n], lse[n] from logits [n, vocab]; targets already range-checked. */
void log_softmax_gather(int64_t n, int64_t vocab, const float* logits, const int32_t* targets, float* logprobs,
                        float* lse);

/** d_logits[n, vocab] = g_i · (onehot − exp(logits − lse_i)) (overwritten). */
void log_softmax_gather_backward(int64_t n, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, const float* d_logprobs, float* d_logits);

struct UnembedShape {
  int64_t n, d, vocab;
  int64_t row_block;    // rows per tile: W is streamed once per row block
  int64_t vocab_block;  // vocabulary entries per tile: hidden is re-read once per vocab block
};

/** hidden [n, d], w [vocab, d] (the unembedding, or the tied embedding table). */
void unembed_logprobs(const UnembedShape& s, const float* hidden, const float* w, const int32_t* targets,
                      float* logprobs, float* lse);

/**
 * Recomputes each tile's logits and adds d_hidden [n, d] += G · W and, when d_w
 * is not null, d_w [vocab, d] += Gᵀ · hidden, with G the tile's dLogits.
 */
void unembed_logprobs_backward(const UnembedShape& s, const float* hidden, const float* w, const int32_t* targets,
                               const float* lse, const float* d_logprobs, float* d_hidden, float* d_w);

}  // namespace ot
