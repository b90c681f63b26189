// The multi-LoRA grouped op (DESIGN.md C9): rows of many adapters in one call,
// grouped per token row, each adapter with its own rank.
//   forward:  Y[i, :] += s_a · (X[i, :] · A_aᵀ) · B_aᵀ   for every row i with slot a ≥ 0
//   backward: dA_a, dB_a (accumulated), and dX += the LoRA part of the input gradient.
// A_a is [r_a, dIn], B_a is [dOut, r_a]; the rank-sized intermediate stays fp32.
#pragma once

#include <cstdint>

namespace ot {

struct LoraAdapter {
  const float* a;  // [rank, d_in]
  const float* b;  // [d_out, rank]
  int64_t rank;
  float scale;
};

struct LoraGrad {
  float* da;  // [rank, d_in], accumulated
  float* db;  // [d_out, rank], accumulated
};

struct LoraShape {
  int64_t n, d_in, d_out;
};

/**
 * slots[i] ∈ [-1, count): -1 means the row has no adapter. row_invariant: every
 * row through the one-row path, so its delta does not depend on how many rows
 * of its adapter share the call (a sampler's batch); otherwise large groups go
 * through GEMMs and rows are paired, which round differently.
 */
void lora_forward(const LoraShape& s, const float* x, const int32_t* slots, const LoraAdapter* table, int64_t count,
                  float* y, bool row_invariant = false);

/** dx may be null (input gradient not needed); grads has `count` entries. */
void lora_backward(const LoraShape& s, const float* x, const float* dy, const int32_t* slots, const LoraAdapter* table,
                   int64_t count, float* dx, const LoraGrad* grads);

}  // namespace ot
