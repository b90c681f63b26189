// The device target of kernels/convert.cuh: f32 -> bf16 (round to nearest
// even, NaN kept) and bf16 -> f32.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 40
// compile-gate: max-static-smem 0
// compile-gate: ptx ld.global.nc.v4.f32
// compile-gate: ptx st.global.v2.u32
// compile-gate: ptx ld.global.nc.v2.u32
// compile-gate: ptx st.global.v4.u32
#include "../include/ot_cuda/launch.h"
#include "convert.cuh"
#include "launchers.h"  // the other launchers' declarations

namespace k = ot_cuda::kernels;

// 256 threads (kElementwiseThreads), four elements a step.

OT_KERNEL(ot_convert_f32_to_bf16_kernel, (k::kElementwiseThreads),
          (const float* __restrict__ x, std::uint16_t* __restrict__ y, std::int64_t count),
          k::convert_f32_to_bf16(ctx, x, y, count))

OT_KERNEL(ot_convert_bf16_to_f32_kernel, (k::kElementwiseThreads),
          (const std::uint16_t* __restrict__ x, float* __restrict__ y, std::int64_t count),
          k::convert_bf16_to_f32(ctx, x, y, count))

OT_KERNEL(ot_convert_f32_to_bf16_split_kernel, (k::kElementwiseThreads),
          (const float* __restrict__ x, std::uint16_t* __restrict__ hi, std::uint16_t* __restrict__ lo,
           std::int64_t count),
          k::convert_f32_to_bf16_split(ctx, x, hi, lo, count))

// y[i] = x[i] rounded to bf16 (uint16 bits), i < count. count >= 0; 0 launches nothing.
extern "C" cudaError_t ot_cuda_convert_f32_to_bf16(const float* x, std::uint16_t* y, std::int64_t count,
                                                   cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_convert_f32_to_bf16_kernel, k::convert_blocks(count), k::kElementwiseThreads, 0, stream, x, y,
                   count);
}

// y[i] = x[i] (bf16 bits) widened to f32, i < count. count >= 0; 0 launches nothing.
extern "C" cudaError_t ot_cuda_convert_bf16_to_f32(const std::uint16_t* x, float* y, std::int64_t count,
                                                   cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_convert_bf16_to_f32_kernel, k::convert_blocks(count), k::kElementwiseThreads, 0, stream, x, y,
                   count);
}

// hi[i] + lo[i] = x[i] to about 2^-17 (convert_f32_to_bf16_split), i < count.
extern "C" cudaError_t ot_cuda_convert_f32_to_bf16_split(const float* x, std::uint16_t* hi, std::uint16_t* lo,
                                                         std::int64_t count, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  return OT_LAUNCH(ot_convert_f32_to_bf16_split_kernel, k::elementwise_blocks(count), k::kElementwiseThreads, 0, stream,
                   x, hi, lo, count);
}
