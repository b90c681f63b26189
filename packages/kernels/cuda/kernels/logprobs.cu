// The device target of kernels/logprobs.cuh (forward and backward).
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx ex2.approx
#include <cuda_runtime.h>

#include <cstdint>

#include "logprobs.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

namespace k = ot_cuda::kernels;

// Declared here (not in launchers.h yet): the definitions below must match.

__global__ void __launch_bounds__(256)
    ot_log_softmax_gather_f32_kernel(const float* __restrict__ logits, const std::int32_t* __restrict__ targets,
                                     float* __restrict__ logprobs, float* __restrict__ lse, int vocab) {
  ot_cuda::DeviceCtx ctx;
  k::log_softmax_gather_f32(ctx, logits, targets, logprobs, lse, vocab);
}

__global__ void __launch_bounds__(256) ot_log_softmax_gather_backward_f32_kernel(
    const float* __restrict__ logits, const std::int32_t* __restrict__ targets, const float* __restrict__ lse,
    const float* __restrict__ d_logprobs, float* __restrict__ d_logits, int vocab) {
  ot_cuda::DeviceCtx ctx;
  k::log_softmax_gather_backward_f32(ctx, logits, targets, lse, d_logprobs, d_logits, vocab);
}

// logprobs[rows], lse[rows] from logits [rows, vocab] (targets in [0, vocab)).
extern "C" cudaError_t ot_cuda_log_softmax_gather_f32(const float* logits, const std::int32_t* targets,
                                                      float* logprobs, float* lse, int rows, int vocab,
                                                      cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const int threads = k::logprobs_block_threads(vocab);
  ot_log_softmax_gather_f32_kernel<<<rows, threads, k::logprobs_shared_bytes(threads), stream>>>(
      logits, targets, logprobs, lse, vocab);
  return cudaGetLastError();
}

// d_logits [rows, vocab] (overwritten) from the forward's lse and dL/dlogprobs.
extern "C" cudaError_t ot_cuda_log_softmax_gather_backward_f32(const float* logits, const std::int32_t* targets,
                                                               const float* lse, const float* d_logprobs,
                                                               float* d_logits, int rows, int vocab,
                                                               cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  ot_log_softmax_gather_backward_f32_kernel<<<rows, k::logprobs_block_threads(vocab), 0, stream>>>(
      logits, targets, lse, d_logprobs, d_logits, vocab);
  return cudaGetLastError();
}
