// Products with a frozen weight stored as bfloat16 (the top 16 bits of a float32,
// held as uint16): f32 activations, bf16 weights widened to f32 as they are
// loaded, f32 accumulation. Halving the weight bytes is the win: batch-1 decode
// streams every weight once per token.
//
// Both products are batch-invariant: every output element is summed in one order
// whatever the number of rows, so one request's numbers never depend on what else
// is in the batch, and the sampler and the trainer agree on a snapshot.
#pragma once

#include <cstdint>

namespace ot {

/** y[m, n] (+)= x[m, k] · W[n, k]ᵀ, W in bf16: a linear layer's forward. */
void gemm_bf16_nt(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* w, bool accumulate, float* y);

/** dx[m, k] (+)= dy[m, n] · W[n, k], W in bf16: a linear layer's input gradient. */
void gemm_bf16_nn(int64_t m, int64_t n, int64_t k, const float* dy, const uint16_t* w, bool accumulate, float* dx);

/** out[i, :] = table[ids[i], :] widened to f32 (ids already checked against the vocabulary). */
void embedding_bf16(int64_t n, int64_t d, const int32_t* ids, const uint16_t* table, float* out);

}  // namespace ot
