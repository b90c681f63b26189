// The device target of kernels/lora_rows.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a (every
// kernel; 128-thread blocks, so the budget is about occupancy, not limits):
// compile-gate: max-registers 56
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx vote.sync.ballot.b32
// compile-gate: ptx atom.global.add.f32
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "launchers.h"
#include "lora_rows.cuh"

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_lora_rows_shrink_a_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters, int count,
           const float* __restrict__ z, int n, int width, float* __restrict__ parts, int rank_stride),
          k::lora_rows_shrink_a(ctx, slots, adapters, count, z, n, width, parts, rank_stride))

OT_KERNEL(ot_lora_rows_shrink_b_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters, int count,
           const float* __restrict__ z, int n, int width, float* __restrict__ parts, int rank_stride),
          k::lora_rows_shrink_b(ctx, slots, adapters, count, z, n, width, parts, rank_stride))

OT_KERNEL(ot_lora_rows_reduce_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters, int count,
           float* parts, int splits, int n, int rank_stride),
          k::lora_rows_reduce(ctx, slots, adapters, count, parts, splits, n, rank_stride))

OT_KERNEL(ot_lora_rows_expand_a_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters, int count,
           const float* __restrict__ parts, int splits, int n, int rank_stride, float* __restrict__ out, int width),
          k::lora_rows_expand_a(ctx, slots, adapters, count, parts, splits, n, rank_stride, out, width))

OT_KERNEL(ot_lora_rows_expand_b_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters, int count,
           const float* __restrict__ parts, int splits, int n, int rank_stride, float* __restrict__ out, int width),
          k::lora_rows_expand_b(ctx, slots, adapters, count, parts, splits, n, rank_stride, out, width))

// No __restrict__ on the gradients: two slots may share one buffer.
OT_KERNEL(ot_lora_rows_grad_f32_kernel, (k::kLoraRowsThreads),
          (const std::int32_t* __restrict__ slots, const k::LoraAdapterF32* __restrict__ adapters,
           const k::LoraGradF32* grads, int count, k::LoraMatrix m, const float* __restrict__ v, int n, int rank_stride,
           const float* __restrict__ z, int width),
          k::lora_rows_grad(ctx, slots, adapters, grads, count, m, v, n, rank_stride, z, width))

namespace {

// Shapes the grids can hold: column tiles in grid.y (expand) and adapters in
// grid.z (grad) are limited to 65535.
bool lora_rows_args_ok(int n, int d_in, int d_out, int count, int rank_stride) {
  constexpr int kMaxGridYZ = 65535;
  return n >= 0 && d_in > 0 && d_out > 0 && count >= 0 && count <= kMaxGridYZ && rank_stride > 0 &&
         rank_stride <= k::kLoraMaxRank && k::lora_tiles(d_in, k::kLoraRowsChunk) <= kMaxGridYZ &&
         k::lora_tiles(d_out, k::kLoraRowsChunk) <= kMaxGridYZ;
}

}  // namespace

// The launchers' workspaces in bytes, for a caller without the header (the addon).
extern "C" std::size_t ot_cuda_lora_rows_forward_f32_workspace_bytes(int n, int d_in, int rank_stride) {
  return lora_rows_args_ok(n, d_in, 1, 1, rank_stride)
             ? k::lora_rows_forward_workspace_floats(n, d_in, rank_stride) * sizeof(float)
             : 0;
}
extern "C" std::size_t ot_cuda_lora_rows_backward_f32_workspace_bytes(int n, int d_in, int d_out, int rank_stride) {
  return lora_rows_args_ok(n, d_in, d_out, 1, rank_stride)
             ? k::lora_rows_backward_workspace_floats(n, d_in, d_out, rank_stride) * sizeof(float)
             : 0;
}

// y[n, d_out] += the adapters' deltas, row i through adapter slots[i]. slots
// and adapters are device memory (every rank <= rank_stride <= kLoraMaxRank);
// workspace: lora_rows_forward_workspace_floats(n, d_in, rank_stride).
extern "C" cudaError_t ot_cuda_lora_rows_forward_f32(const float* x, float* y, int n, int d_in, int d_out,
                                                     const std::int32_t* slots, const k::LoraAdapterF32* adapters,
                                                     int count, int rank_stride, float* workspace,
                                                     cudaStream_t stream) {
  if (!lora_rows_args_ok(n, d_in, d_out, count, rank_stride)) return cudaErrorInvalidValue;
  if (n == 0 || count == 0) return cudaSuccess;
  if (x == nullptr || y == nullptr || slots == nullptr || adapters == nullptr || workspace == nullptr) {
    return cudaErrorInvalidValue;
  }
  const unsigned rows = static_cast<unsigned>(n);
  const int splits = k::lora_rows_splits(d_in);
  const ot_cuda::Dim3 shrink{rows, static_cast<unsigned>(splits)};
  const ot_cuda::Dim3 expand{rows, static_cast<unsigned>(k::lora_tiles(d_out, k::kLoraRowsChunk))};
  if (const cudaError_t e =
          OT_LAUNCH(ot_lora_rows_shrink_a_f32_kernel, shrink, k::kLoraRowsThreads, k::lora_rows_shrink_a_shared_bytes(),
                    stream, slots, adapters, count, x, n, d_in, workspace, rank_stride);
      e != cudaSuccess) {
    return e;
  }
  return OT_LAUNCH(ot_lora_rows_expand_b_f32_kernel, expand, k::kLoraRowsThreads, k::lora_rows_expand_b_shared_bytes(),
                   stream, slots, adapters, count, workspace, splits, n, rank_stride, y, d_out);
}

// dA_a, dB_a += (grads[a], device memory; two slots may share a buffer), and
// dx += the LoRA part of the input gradient unless dx is null. workspace:
// lora_rows_backward_workspace_floats(n, d_in, d_out, rank_stride).
extern "C" cudaError_t ot_cuda_lora_rows_backward_f32(const float* x, const float* dy, float* dx, int n, int d_in,
                                                      int d_out, const std::int32_t* slots,
                                                      const k::LoraAdapterF32* adapters, const k::LoraGradF32* grads,
                                                      int count, int rank_stride, float* workspace,
                                                      cudaStream_t stream) {
  if (!lora_rows_args_ok(n, d_in, d_out, count, rank_stride)) return cudaErrorInvalidValue;
  if (n == 0 || count == 0) return cudaSuccess;
  if (x == nullptr || dy == nullptr || slots == nullptr || adapters == nullptr || grads == nullptr ||
      workspace == nullptr) {
    return cudaErrorInvalidValue;
  }
  const unsigned rows = static_cast<unsigned>(n);
  const int in_splits = k::lora_rows_splits(d_in), out_splits = k::lora_rows_splits(d_out);
  float* t = workspace;                                                    // x·Aᵀ
  float* u = workspace + k::lora_rows_parts_floats(n, d_in, rank_stride);  // dy·B
  const auto by_rows = [rows](int blocks) { return ot_cuda::Dim3{rows, static_cast<unsigned>(blocks)}; };
  const int reduce_blocks = k::lora_rows_reduce_blocks(n, rank_stride);
  const unsigned q_chunks = static_cast<unsigned>(k::lora_rows_grad_q_chunks(rank_stride));
  const auto grad_grid = [q_chunks, count](int width) {
    return ot_cuda::Dim3{static_cast<unsigned>(k::lora_tiles(width, k::kLoraRowsChunk)), q_chunks,
                         static_cast<unsigned>(count)};
  };
  cudaError_t e =
      OT_LAUNCH(ot_lora_rows_shrink_a_f32_kernel, by_rows(in_splits), k::kLoraRowsThreads,
                k::lora_rows_shrink_a_shared_bytes(), stream, slots, adapters, count, x, n, d_in, t, rank_stride);
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_rows_shrink_b_f32_kernel, by_rows(out_splits), k::kLoraRowsThreads,
                  k::lora_rows_shrink_b_shared_bytes(), stream, slots, adapters, count, dy, n, d_out, u, rank_stride);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_rows_reduce_f32_kernel, reduce_blocks, k::kLoraRowsThreads, 0, stream, slots, adapters, count,
                  t, in_splits, n, rank_stride);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_rows_reduce_f32_kernel, reduce_blocks, k::kLoraRowsThreads, 0, stream, slots, adapters, count,
                  u, out_splits, n, rank_stride);
  }
  if (e == cudaSuccess && dx != nullptr) {
    e = OT_LAUNCH(ot_lora_rows_expand_a_f32_kernel, by_rows(k::lora_tiles(d_in, k::kLoraRowsChunk)),
                  k::kLoraRowsThreads, k::lora_rows_expand_a_shared_bytes(), stream, slots, adapters, count, u, 1, n,
                  rank_stride, dx, d_in);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_rows_grad_f32_kernel, grad_grid(d_in), k::kLoraRowsThreads, k::lora_rows_grad_shared_bytes(),
                  stream, slots, adapters, grads, count, k::LoraMatrix::A, u, n, rank_stride, x, d_in);
  }
  if (e == cudaSuccess) {
    e = OT_LAUNCH(ot_lora_rows_grad_f32_kernel, grad_grid(d_out), k::kLoraRowsThreads, k::lora_rows_grad_shared_bytes(),
                  stream, slots, adapters, grads, count, k::LoraMatrix::B, t, n, rank_stride, dy, d_out);
  }
  return e;
}
