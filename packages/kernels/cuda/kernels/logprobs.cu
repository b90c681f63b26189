// The device target of kernels/logprobs.cuh (forward and backward).
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx ex2.approx
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "logprobs.cuh"

namespace k = ot_cuda::kernels;

// Declared here (not in launchers.h yet): the definitions below must match.

OT_KERNEL(ot_log_softmax_gather_f32_kernel, (256),
          (const float* __restrict__ logits, const std::int32_t* __restrict__ targets, float* __restrict__ logprobs,
           float* __restrict__ lse, int vocab),
          k::log_softmax_gather_f32(ctx, logits, targets, logprobs, lse, vocab))

OT_KERNEL(ot_log_softmax_gather_backward_f32_kernel, (256),
          (const float* __restrict__ logits, const std::int32_t* __restrict__ targets, const float* __restrict__ lse,
           const float* __restrict__ d_logprobs, float* __restrict__ d_logits, int vocab),
          k::log_softmax_gather_backward_f32(ctx, logits, targets, lse, d_logprobs, d_logits, vocab))

// logprobs[rows], lse[rows] from logits [rows, vocab] (targets in [0, vocab)).
extern "C" cudaError_t ot_cuda_log_softmax_gather_f32(const float* logits, const std::int32_t* targets, float* logprobs,
                                                      float* lse, int rows, int vocab, cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const int threads = k::logprobs_block_threads(vocab);
  return OT_LAUNCH(ot_log_softmax_gather_f32_kernel, rows, threads, k::logprobs_shared_bytes(threads), stream, logits,
                   targets, logprobs, lse, vocab);
}

// d_logits [rows, vocab] (overwritten) from the forward's lse and dL/dlogprobs.
extern "C" cudaError_t ot_cuda_log_softmax_gather_backward_f32(const float* logits, const std::int32_t* targets,
                                                               const float* lse, const float* d_logprobs,
                                                               float* d_logits, int rows, int vocab,
                                                               cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  return OT_LAUNCH(ot_log_softmax_gather_backward_f32_kernel, rows, k::logprobs_block_threads(vocab), 0, stream, logits,
                   targets, lse, d_logprobs, d_logits, vocab);
}
