// The device target of kernels/unembed.cuh (forward: partials + combine;
// backward: dHidden and dW).
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 128
// compile-gate: max-static-smem 0
// compile-gate: ptx fma.rn.f32
// compile-gate: ptx bar.sync
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx ex2.approx
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "launchers.h"
#include "unembed.cuh"

namespace k = ot_cuda::kernels;

// 256 threads (unembed_block_threads): 16 logits and, in the backward, 16
// output accumulators per thread, plus the operands ptxas keeps in flight; at
// least 2 blocks per SM (≤ 128 registers).
OT_KERNEL(ot_unembed_partials_f32_kernel, (256, 2),
          (k::UnembedArgs a, float* __restrict__ logprobs, float* __restrict__ workspace),
          k::unembed_partials_f32(ctx, a, logprobs, workspace))

OT_KERNEL(ot_unembed_combine_f32_kernel, (256),
          (const float* __restrict__ workspace, float* __restrict__ logprobs, float* __restrict__ lse, int n,
           int vocab),
          k::unembed_combine_f32(ctx, workspace, logprobs, lse, n, vocab))

OT_KERNEL(ot_unembed_backward_hidden_f32_kernel, (256, 2),
          (k::UnembedArgs a, const float* __restrict__ lse, const float* __restrict__ d_logprobs,
           float* __restrict__ d_hidden),
          k::unembed_backward_hidden_f32(ctx, a, lse, d_logprobs, d_hidden))

OT_KERNEL(ot_unembed_backward_weight_f32_kernel, (256, 2),
          (k::UnembedArgs a, const float* __restrict__ lse, const float* __restrict__ d_logprobs,
           float* __restrict__ d_w),
          k::unembed_backward_weight_f32(ctx, a, lse, d_logprobs, d_w))

// The forward's workspace, for a caller without the header (the addon).
extern "C" std::size_t ot_cuda_unembed_logprobs_f32_workspace_bytes(int n, int vocab) {
  return n > 0 && vocab > 0 ? k::unembed_workspace_bytes(n, vocab) : 0;
}

// logprobs[n], lse[n] from hidden [n, d] and w [vocab, d] (targets in [0,
// vocab)); workspace: k::unembed_workspace_bytes(n, vocab) bytes of device
// memory, 4-byte aligned, nothing kept between calls.
extern "C" cudaError_t ot_cuda_unembed_logprobs_f32(const float* hidden, const float* w, const std::int32_t* targets,
                                                    float* logprobs, float* lse, int n, int d, int vocab,
                                                    float* workspace, cudaStream_t stream) {
  if (n < 0 || d <= 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (workspace == nullptr) return cudaErrorInvalidValue;
  const ot_cuda::Dim3 g = k::unembed_partials_grid(n, vocab);
  if (g.y > 65535) return cudaErrorInvalidValue;
  const k::UnembedArgs a{hidden, w, targets, n, d, vocab};
  const cudaError_t e = OT_LAUNCH(ot_unembed_partials_f32_kernel, g, k::unembed_block_threads(),
                                  k::unembed_forward_shared_bytes(), stream, a, logprobs, workspace);
  if (e != cudaSuccess) return e;
  return OT_LAUNCH(ot_unembed_combine_f32_kernel, n, k::unembed_combine_threads(vocab),
                   k::unembed_combine_shared_bytes(vocab), stream, workspace, logprobs, lse, n, vocab);
}

// d_hidden [n, d] += G · W and, when d_w is not null, d_w [vocab, d] += Gᵀ ·
// hidden, with G recomputed from lse (the forward's) and d_logprobs.
extern "C" cudaError_t ot_cuda_unembed_logprobs_backward_f32(const float* hidden, const float* w,
                                                             const std::int32_t* targets, const float* lse,
                                                             const float* d_logprobs, float* d_hidden, float* d_w,
                                                             int n, int d, int vocab, cudaStream_t stream) {
  if (n < 0 || d <= 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const ot_cuda::Dim3 gh = k::unembed_backward_hidden_grid(n, d), gw = k::unembed_backward_weight_grid(vocab, d);
  if (gh.y > 65535 || gw.y > 65535) return cudaErrorInvalidValue;
  const k::UnembedArgs a{hidden, w, targets, n, d, vocab};
  const std::size_t shared = k::unembed_backward_shared_bytes();
  const cudaError_t e = OT_LAUNCH(ot_unembed_backward_hidden_f32_kernel, gh, k::unembed_block_threads(), shared, stream,
                                  a, lse, d_logprobs, d_hidden);
  if (e != cudaSuccess || d_w == nullptr) return e;
  return OT_LAUNCH(ot_unembed_backward_weight_f32_kernel, gw, k::unembed_block_threads(), shared, stream, a, lse,
                   d_logprobs, d_w);
}
