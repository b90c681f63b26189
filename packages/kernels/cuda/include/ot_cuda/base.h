// What a kernel body and both of its executions share: the dim3-like type, the
// warp constants, the host/device annotation and the few math functions whose
// spelling differs between CUDA's device library and the C++ standard library.
// Nothing here depends on which execution (nvcc's device code or the CPU
// emulator) is being compiled.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
// A kernel body is a __host__ __device__ template: nvcc instantiates it with
// DeviceCtx inside a __global__ wrapper, g++ with the emulator's Ctx.
#define OT_HD __host__ __device__
#define OT_FORCEINLINE __forceinline__
#else
#define OT_HD
#define OT_FORCEINLINE inline
#endif

namespace ot_cuda {

// CUDA's dim3: unspecified components are 1, so Dim3{256} is a 1-D block.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// 1/sqrt(x): the device's rsqrtf (<= 2 ulp) on a GPU; correctly rounded sqrt
// then a division on the host. The tolerance of every test covers both.
OT_HD OT_FORCEINLINE float rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrtf(x);
#else
  return 1.0f / std::sqrt(x);
#endif
}

OT_HD OT_FORCEINLINE float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return ::fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Shared memory is only reached through the context (there is no __shared__
// in a body: g++ has no such storage class), so a body writes
// `auto s = ot_cuda::shared_array<float>(ctx);` instead of the clumsier
// `ctx.template shared<float>()` a dependent name needs.
template <class T, class Ctx>
OT_HD OT_FORCEINLINE auto shared_array(Ctx& ctx, std::size_t byte_offset = 0) {
  return ctx.template shared<T>(byte_offset);
}

}  // namespace ot_cuda
