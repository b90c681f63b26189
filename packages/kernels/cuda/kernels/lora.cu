// The device target of kernels/lora.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a (all three
// kernels; 128-thread blocks, so the budget is about occupancy, not limits):
// compile-gate: max-registers 64
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx atom.global.add.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "lora.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_lora_shrink_f32_kernel, (k::kLoraThreads),
          (const k::LoraSegment* __restrict__ segments, const k::LoraAdapterF32* __restrict__ adapters, k::LoraMatrix m,
           const float* __restrict__ z, int n, int width, float* __restrict__ parts, int rank_stride),
          k::lora_shrink(ctx, segments, adapters, m, z, n, width, parts, rank_stride))

OT_KERNEL(ot_lora_expand_f32_kernel, (k::kLoraThreads),
          (const k::LoraSegment* __restrict__ segments, const k::LoraAdapterF32* __restrict__ adapters, k::LoraMatrix m,
           const float* __restrict__ parts, int tiles, int n, int rank_stride, float* __restrict__ out, int width),
          k::lora_expand(ctx, segments, adapters, m, parts, tiles, n, rank_stride, out, width))

OT_KERNEL(ot_lora_grad_f32_kernel, (k::kLoraThreads),
          (const k::LoraSegment* __restrict__ segments, const k::LoraAdapterF32* __restrict__ adapters,
           const k::LoraGradF32* __restrict__ grads, k::LoraMatrix m, const float* __restrict__ parts, int tiles, int n,
           int rank_stride, const float* __restrict__ z, int width),
          k::lora_grad(ctx, segments, adapters, grads, m, parts, tiles, n, rank_stride, z, width))

namespace {

bool lora_args_ok(int n, int d_in, int d_out, int num_segments, int rank_stride) {
  return n >= 0 && d_in > 0 && d_out > 0 && num_segments >= 0 && rank_stride > 0 && rank_stride <= k::kLoraMaxRank;
}

}  // namespace

// y[n, d_out] += the adapters' deltas. segments (device memory, from
// lora_build_segments on the host), adapters (device memory; every rank <=
// rank_stride <= kLoraMaxRank), workspace: lora_forward_workspace_floats.
extern "C" cudaError_t ot_cuda_lora_forward_f32(const float* x, float* y, int n, int d_in, int d_out,
                                                const k::LoraSegment* segments, int num_segments,
                                                const k::LoraAdapterF32* adapters, int rank_stride, float* workspace,
                                                cudaStream_t stream) {
  if (!lora_args_ok(n, d_in, d_out, num_segments, rank_stride)) return cudaErrorInvalidValue;
  if (num_segments == 0) return cudaSuccess;
  const unsigned segs = static_cast<unsigned>(num_segments);
  const int in_tiles = k::lora_tiles(d_in, k::kLoraShrinkTile);
  const ot_cuda::Dim3 shrink{segs, static_cast<unsigned>(in_tiles)};
  const ot_cuda::Dim3 expand{segs, static_cast<unsigned>(k::lora_tiles(d_out, k::kLoraTile))};
  if (const cudaError_t e = OT_LAUNCH(ot_lora_shrink_f32_kernel, shrink, k::kLoraThreads, k::lora_shrink_shared_bytes(),
                                      stream, segments, adapters, k::LoraMatrix::A, x, n, d_in, workspace, rank_stride);
      e != cudaSuccess) {
    return e;
  }
  return OT_LAUNCH(ot_lora_expand_f32_kernel, expand, k::kLoraThreads, k::lora_expand_shared_bytes(), stream, segments,
                   adapters, k::LoraMatrix::B, workspace, in_tiles, n, rank_stride, y, d_out);
}

// dA_a, dB_a += (grads[a], device memory), and dx += the LoRA part of the
// input gradient unless dx is null. workspace: lora_backward_workspace_floats.
extern "C" cudaError_t ot_cuda_lora_backward_f32(const float* x, const float* dy, float* dx, int n, int d_in, int d_out,
                                                 const k::LoraSegment* segments, int num_segments,
                                                 const k::LoraAdapterF32* adapters, const k::LoraGradF32* grads,
                                                 int rank_stride, float* workspace, cudaStream_t stream) {
  if (!lora_args_ok(n, d_in, d_out, num_segments, rank_stride)) return cudaErrorInvalidValue;
  if (num_segments == 0) return cudaSuccess;
  const unsigned segs = static_cast<unsigned>(num_segments);
  const int in_tiles = k::lora_tiles(d_in, k::kLoraShrinkTile), out_tiles = k::lora_tiles(d_out, k::kLoraShrinkTile);
  float* t_parts = workspace;                                               // x·Aᵀ
  float* u_parts = workspace + k::lora_parts_floats(n, d_in, rank_stride);  // dy·B
  const auto grid = [segs](int tiles) { return ot_cuda::Dim3{segs, static_cast<unsigned>(tiles)}; };
  const int in_blocks = k::lora_tiles(d_in, k::kLoraTile), out_blocks = k::lora_tiles(d_out, k::kLoraTile);
  cudaError_t e = OT_LAUNCH(ot_lora_shrink_f32_kernel, grid(in_tiles), k::kLoraThreads, k::lora_shrink_shared_bytes(),
                            stream, segments, adapters, k::LoraMatrix::A, x, n, d_in, t_parts, rank_stride);
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_shrink_f32_kernel, grid(out_tiles), k::kLoraThreads, k::lora_shrink_shared_bytes(), stream,
                  segments, adapters, k::LoraMatrix::B, dy, n, d_out, u_parts, rank_stride);
  }
  if (e == cudaSuccess && dx != nullptr) {
    e = OT_LAUNCH(ot_lora_expand_f32_kernel, grid(in_blocks), k::kLoraThreads, k::lora_expand_shared_bytes(), stream,
                  segments, adapters, k::LoraMatrix::A, u_parts, out_tiles, n, rank_stride, dx, d_in);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_grad_f32_kernel, grid(in_blocks), k::kLoraThreads, k::lora_grad_shared_bytes(), stream,
                  segments, adapters, grads, k::LoraMatrix::A, u_parts, out_tiles, n, rank_stride, x, d_in);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_grad_f32_kernel, grid(out_blocks), k::kLoraThreads, k::lora_grad_shared_bytes(), stream,
                  segments, adapters, grads, k::LoraMatrix::B, t_parts, in_tiles, n, rank_stride, dy, d_out);
  }
  return e;
}
