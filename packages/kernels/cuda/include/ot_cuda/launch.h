// A kernel's entry point and its launch, written once for both builds of a
// kernels/*.cu:
//
//   OT_KERNEL(name, (max_threads[, min_blocks]), (params...), body...)
//   return OT_LAUNCH(name, grid, block, shared_bytes, stream, args...);
//
// Under nvcc OT_KERNEL is a __global__ function with __launch_bounds__ whose
// body sees `ctx`, a DeviceCtx, and OT_LAUNCH is name<<<...>>>(args) followed
// by cudaGetLastError(). Under g++ with OT_CUDA_EMU (the emulated device: the
// same launchers over host memory, for the engine's tests) OT_KERNEL is a
// function template over the emulator's context and OT_LAUNCH runs it to
// completion in the CPU execution with emu::device_options(). So a launcher's
// validation, launch shape and argument order exist once.
#pragma once

#include <type_traits>

#include "ctx.h"
#include "runtime.h"

namespace ot_cuda {

// A launch dimension from a Dim3 or a count (a 1-D grid or block).
template <class T>
OT_FORCEINLINE Dim3 launch_dim(T v) {
  if constexpr (std::is_same_v<T, Dim3>) {
    return v;
  } else {
    static_assert(std::is_integral_v<T>, "a launch dimension is a Dim3 or an integer count");
    return Dim3{static_cast<unsigned>(v)};
  }
}

}  // namespace ot_cuda

#define OT_CUDA_UNPAREN(...) __VA_ARGS__

#if defined(__CUDACC__)

#define OT_KERNEL(name, bounds, params, ...)             \
  __global__ void __launch_bounds__ bounds name params { \
    ot_cuda::DeviceCtx ctx;                              \
    __VA_ARGS__;                                         \
  }

#define OT_LAUNCH(name, grid, block, shared_bytes, stream, ...)                                            \
  (name<<<ot_cuda::device_dim(ot_cuda::launch_dim(grid)), ot_cuda::device_dim(ot_cuda::launch_dim(block)), \
          (shared_bytes), (stream)>>>(__VA_ARGS__),                                                        \
   cudaGetLastError())

namespace ot_cuda {
OT_FORCEINLINE dim3 device_dim(Dim3 d) { return dim3(d.x, d.y, d.z); }
}  // namespace ot_cuda

#elif defined(OT_CUDA_EMU)

namespace ot_cuda::emu {
// The options every emulated-device launch runs with (default: none of the
// checks, one worker); tests may turn checks on.
Options& device_options();

// A block larger than the kernel's __launch_bounds__ fails to launch on a
// device; here it is a KernelError naming the kernel.
void check_launch_bounds(const char* kernel, unsigned max_threads, Dim3 block);
}  // namespace ot_cuda::emu

#define OT_CUDA_FIRST(...) OT_CUDA_FIRST_(__VA_ARGS__, 0)
#define OT_CUDA_FIRST_(first, ...) first

#define OT_KERNEL(name, bounds, params, ...)                             \
  inline constexpr unsigned name##_max_threads = (OT_CUDA_FIRST bounds); \
  static_assert(name##_max_threads > 0 && name##_max_threads <= 1024);   \
  template <class Ctx>                                                   \
  void name(Ctx& ctx, OT_CUDA_UNPAREN params) {                          \
    __VA_ARGS__;                                                         \
  }

#define OT_LAUNCH(name, grid, block, shared_bytes, stream, ...)                                              \
  ((void)(stream), ot_cuda::emu::check_launch_bounds(#name, name##_max_threads, ot_cuda::launch_dim(block)), \
   ot_cuda::emu::launch(ot_cuda::launch_dim(grid), ot_cuda::launch_dim(block), (shared_bytes),               \
                        ot_cuda::emu::device_options(), [=](auto& ctx) { name(ctx, __VA_ARGS__); }),         \
   cudaGetLastError())

#else
#error "ot_cuda/launch.h is for kernels/*.cu: compiled by nvcc, or by g++ with OT_CUDA_EMU (the emulated device)"
#endif
