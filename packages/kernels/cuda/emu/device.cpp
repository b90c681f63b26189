// The emulated device's side of include/ot_cuda/launch.h and runtime.h: the
// options its launches run with and the runtime calls launchers make. Device
// memory is host memory here, so a memset is a memset.
#include <cstring>
#include <string>

#include "../include/ot_cuda/launch.h"

namespace ot_cuda::emu {

// One worker: the engine's launches are small, and a launch on several workers
// starts that many OS threads.
Options& device_options() {
  static Options options;
  return options;
}

void check_launch_bounds(const char* kernel, unsigned max_threads, Dim3 block) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads > max_threads) {
    throw KernelError(std::string(kernel) + ": a block of " + std::to_string(threads) +
                      " threads exceeds its __launch_bounds__ (" + std::to_string(max_threads) + ")");
  }
}

}  // namespace ot_cuda::emu

cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t) {
  if (bytes != 0 && p == nullptr) return cudaErrorInvalidValue;
  std::memset(p, value, bytes);
  return cudaSuccess;
}
