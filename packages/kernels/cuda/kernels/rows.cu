// The device target of kernels/rows.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx st.global.v4.f32
// compile-gate: ptx st.global.v2.f64
// compile-gate: ptx bar.sync
#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launchers' declarations, checked against their definitions here
#include "rows.cuh"

namespace k = ot_cuda::kernels;

// ---- kernels -------------------------------------------------------------
// No __restrict__ where two pointers may meet: add_in_place may be x += x, and
// copy_kv_blocks reads and writes one cache.

OT_KERNEL(ot_add_in_place_f32_kernel, (k::kElementwiseThreads),
          (float* target, const float* source, std::int64_t count), k::add_in_place_f32(ctx, target, source, count))

OT_KERNEL(ot_scale_f32_kernel, (k::kElementwiseThreads), (float* __restrict__ x, std::int64_t count, double factor),
          k::scale_f32(ctx, x, count, factor))

OT_KERNEL(ot_fill_f32_kernel, (k::kElementwiseThreads), (float* __restrict__ x, std::int64_t count, float value),
          k::fill(ctx, x, count, value))
OT_KERNEL(ot_fill_i32_kernel, (k::kElementwiseThreads),
          (std::int32_t* __restrict__ x, std::int64_t count, std::int32_t value), k::fill(ctx, x, count, value))
OT_KERNEL(ot_fill_f64_kernel, (k::kElementwiseThreads), (double* __restrict__ x, std::int64_t count, double value),
          k::fill(ctx, x, count, value))

// 256 threads at most (row_block_threads).
OT_KERNEL(ot_add_bias_f32_kernel, (256), (float* __restrict__ y, const float* __restrict__ bias, int rows, int d),
          k::add_bias_f32(ctx, y, bias, rows, d))

OT_KERNEL(ot_gather_rows_f32_kernel, (256),
          (const float* __restrict__ source, const std::int32_t* __restrict__ rows, int n, int d,
           float* __restrict__ out),
          k::gather_rows_f32(ctx, source, rows, n, d, out))

OT_KERNEL(ot_scatter_rows_f32_kernel, (256),
          (float* __restrict__ target, const std::int32_t* __restrict__ rows, int n, int d,
           const float* __restrict__ source),
          k::scatter_rows_f32(ctx, target, rows, n, d, source))

OT_KERNEL(ot_copy_kv_blocks_f32_kernel, (k::kElementwiseThreads),
          (float* key_cache, float* value_cache, int block_size, int row, const std::int32_t* __restrict__ from,
           const std::int32_t* __restrict__ to, const std::int32_t* __restrict__ tokens, int num_copies),
          k::copy_kv_blocks_f32(ctx, key_cache, value_cache, block_size, row, from, to, tokens, num_copies))

OT_KERNEL(ot_sum_rows_f32_kernel, (k::kSumRowsThreads),
          (const float* __restrict__ dy, int rows, int d, float* __restrict__ out),
          k::sum_rows_f32(ctx, dy, rows, d, out))

// ---- launchers -----------------------------------------------------------

extern "C" cudaError_t ot_cuda_add_in_place_f32(float* target, const float* source, std::int64_t count,
                                                cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_add_in_place_f32_kernel, k::pack_blocks<float>(count), k::kElementwiseThreads, 0, stream, target,
                   source, count);
}

extern "C" cudaError_t ot_cuda_scale_f32(float* x, std::int64_t count, double factor, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_scale_f32_kernel, k::pack_blocks<float>(count), k::kElementwiseThreads, 0, stream, x, count,
                   factor);
}

extern "C" cudaError_t ot_cuda_fill_f32(float* x, std::int64_t count, float value, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_fill_f32_kernel, k::pack_blocks<float>(count), k::kElementwiseThreads, 0, stream, x, count,
                   value);
}

extern "C" cudaError_t ot_cuda_fill_i32(std::int32_t* x, std::int64_t count, std::int32_t value, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_fill_i32_kernel, k::pack_blocks<std::int32_t>(count), k::kElementwiseThreads, 0, stream, x, count,
                   value);
}

extern "C" cudaError_t ot_cuda_fill_f64(double* x, std::int64_t count, double value, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_fill_f64_kernel, k::pack_blocks<double>(count), k::kElementwiseThreads, 0, stream, x, count,
                   value);
}

extern "C" cudaError_t ot_cuda_add_bias_f32(float* y, const float* bias, int rows, int d, cudaStream_t stream) {
  if (rows < 0 || d < 0) return cudaErrorInvalidValue;
  if (rows == 0 || d == 0) return cudaSuccess;
  return OT_LAUNCH(ot_add_bias_f32_kernel, k::row_blocks(rows), k::row_block_threads(d), 0, stream, y, bias, rows, d);
}

extern "C" cudaError_t ot_cuda_gather_rows_f32(const float* source, const std::int32_t* rows, int n, int d, float* out,
                                               cudaStream_t stream) {
  if (n < 0 || d < 0) return cudaErrorInvalidValue;
  if (n == 0 || d == 0) return cudaSuccess;
  return OT_LAUNCH(ot_gather_rows_f32_kernel, k::row_blocks(n), k::row_block_threads(d), 0, stream, source, rows, n, d,
                   out);
}

extern "C" cudaError_t ot_cuda_scatter_rows_f32(float* target, const std::int32_t* rows, int n, int d,
                                                const float* source, cudaStream_t stream) {
  if (n < 0 || d < 0) return cudaErrorInvalidValue;
  if (n == 0 || d == 0) return cudaSuccess;
  return OT_LAUNCH(ot_scatter_rows_f32_kernel, k::row_blocks(n), k::row_block_threads(d), 0, stream, target, rows, n, d,
                   source);
}

// One layer's caches (the CPU backend loops over layers; so does the caller).
extern "C" cudaError_t ot_cuda_copy_kv_blocks_f32(float* key_cache, float* value_cache, int block_size, int row,
                                                  const std::int32_t* from, const std::int32_t* to,
                                                  const std::int32_t* tokens, int num_copies, cudaStream_t stream) {
  if (block_size <= 0 || row <= 0 || num_copies < 0) return cudaErrorInvalidValue;
  if (num_copies == 0) return cudaSuccess;
  const ot_cuda::Dim3 grid{k::copy_kv_chunks(block_size, row), k::copy_kv_grid_y(num_copies)};
  return OT_LAUNCH(ot_copy_kv_blocks_f32_kernel, grid, k::kElementwiseThreads, 0, stream, key_cache, value_cache,
                   block_size, row, from, to, tokens, num_copies);
}

// out[o] += Σ_r dy[r, o] (out is accumulated into, not zeroed).
extern "C" cudaError_t ot_cuda_sum_rows_f32(const float* dy, int rows, int d, float* out, cudaStream_t stream) {
  if (rows < 0 || d < 0) return cudaErrorInvalidValue;
  if (rows == 0 || d == 0) return cudaSuccess;
  return OT_LAUNCH(ot_sum_rows_f32_kernel, k::sum_rows_blocks(d), k::kSumRowsThreads, k::sum_rows_shared_bytes(),
                   stream, dy, rows, d, out);
}
