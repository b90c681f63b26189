// The emulated CUDA addon (opentinker_kernels_cuda_emu.node): the same Device
// as the real addon (device_binding.cc) over host memory, with every
// kernels/*.cu launcher running its kernel in the CPU execution. For tests
// (OPENTINKER_DEVICE=cuda-emulated); never chosen by `auto`. Its memory is
// OT_CUDA_EMU_MEMORY_MIB (default 4096) so budgets behave as on a device.
#include <napi.h>

#include <cstdlib>
#include <string>

#include "device_binding.h"

namespace ot_cuda::addon {

std::string describe_error(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess (0)";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue (1): invalid argument";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation (2): out of memory";
    default:
      return "cudaError (" + std::to_string(static_cast<int>(error)) + ")";
  }
}

namespace {

std::size_t emulated_memory_bytes() {
  const char* mib = std::getenv("OT_CUDA_EMU_MEMORY_MIB");
  const long long value = mib != nullptr ? std::atoll(mib) : 0;
  return static_cast<std::size_t>(value > 0 ? value : 4096) << 20;
}

OpenedDevice open_emulated(int index) {
  OpenedDevice d;
  if (index != 0) {
    d.error = "the emulated CUDA device is cuda:0 only (asked for cuda:" + std::to_string(index) + ")";
    return d;
  }
  d.api = runtime::make_host_device_api(emulated_memory_bytes());
  d.name = "cuda:0";
  d.description = "emulated CUDA device (CPU execution of the kernels)";
  return d;
}

}  // namespace
}  // namespace ot_cuda::addon

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  ot_cuda::addon::register_device(env, exports, ot_cuda::addon::open_emulated);
  return exports;
}

NODE_API_MODULE(opentinker_kernels_cuda_emu, Init)
