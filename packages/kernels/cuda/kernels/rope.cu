// The device target of kernels/rope.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 48
// compile-gate: max-static-smem 0
// compile-gate: ptx bar.sync
// compile-gate: ptx cvt.rn.f32.f64
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "rope.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_rope_f32_kernel, (256),
          (float* __restrict__ x, const std::int32_t* __restrict__ positions, const float* __restrict__ inv_freq,
           int heads, int head_dim, int rot_half, float scale, bool inverse),
          k::rope_f32(ctx, x, positions, inv_freq, heads, head_dim, rot_half, scale, inverse))

namespace {
cudaError_t launch(float* x, const std::int32_t* positions, const float* inv_freq, int n, int heads, int head_dim,
                   int rot_half, float scale, bool inverse, cudaStream_t stream) {
  if (n < 0 || heads <= 0 || head_dim <= 0 || rot_half < 0 || 2 * rot_half > head_dim) return cudaErrorInvalidValue;
  if (n == 0 || rot_half == 0) return cudaSuccess;
  const int threads = k::rope_block_threads(heads, rot_half);
  return OT_LAUNCH(ot_rope_f32_kernel, n, threads, k::rope_shared_bytes(rot_half), stream, x, positions, inv_freq,
                   heads, head_dim, rot_half, scale, inverse);
}
}  // namespace

// x [n, heads, head_dim] rotated in place by +θ (forward) ...
extern "C" cudaError_t ot_cuda_rope_forward_f32(float* x, const std::int32_t* positions, const float* inv_freq, int n,
                                                int heads, int head_dim, int rot_half, float scale,
                                                cudaStream_t stream) {
  return launch(x, positions, inv_freq, n, heads, head_dim, rot_half, scale, false, stream);
}
// ... and dy turned into dx in place by −θ (the transpose).
extern "C" cudaError_t ot_cuda_rope_backward_f32(float* dy, const std::int32_t* positions, const float* inv_freq, int n,
                                                 int heads, int head_dim, int rot_half, float scale,
                                                 cudaStream_t stream) {
  return launch(dy, positions, inv_freq, n, heads, head_dim, rot_half, scale, true, stream);
}
