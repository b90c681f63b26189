// The device target of kernels/reference_kl.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 72
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx fma.rn.f64
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launchers' declarations, checked against their definitions here
#include "reference_kl.cuh"

namespace k = ot_cuda::kernels;

// 256 threads at most (reference_kl_block_threads).
OT_KERNEL(ot_reference_kl_f32_kernel, (256),
          (const float* __restrict__ logits, const float* __restrict__ lse, const float* __restrict__ ref_logits,
           const float* __restrict__ ref_lse, const float* __restrict__ weights, int vocab,
           float* __restrict__ d_logits, double* __restrict__ out),
          k::reference_kl_f32(ctx, logits, lse, ref_logits, ref_lse, weights, vocab, d_logits, out))

// out [rows] (f64) is written for every row; d_logits [rows, vocab] is added to.
extern "C" cudaError_t ot_cuda_reference_kl_f32(const float* logits, const float* lse, const float* ref_logits,
                                                const float* ref_lse, const float* weights, int rows, int vocab,
                                                float* d_logits, double* out, cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const int threads = k::reference_kl_block_threads(vocab);
  return OT_LAUNCH(ot_reference_kl_f32_kernel, rows, threads, k::reference_kl_shared_bytes(threads), stream, logits,
                   lse, ref_logits, ref_lse, weights, vocab, d_logits, out);
}
