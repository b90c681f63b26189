// What both CUDA addons' entry points share (device_binding.cc): how a device is
// opened differs (the CUDA runtime, or host memory for the emulated device);
// the Device object JavaScript gets is the same.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <string>

#include "../include/ot_cuda/runtime.h"
#include "../runtime/device_api.h"

namespace ot_cuda::addon {

struct OpenedDevice {
  std::unique_ptr<runtime::DeviceApi> api;  // null when error is set
  std::string name;                         // "cuda:0"
  std::string description;                  // "NVIDIA H100 80GB HBM3", "emulated CUDA device (CPU execution)"
  std::string error;                        // one line, when the device cannot be opened
};
using OpenDevice = std::function<OpenedDevice(int index)>;

// exports.openDevice(index) → Device, exports.launchers (the names launch() takes).
void register_device(Napi::Env env, Napi::Object exports, OpenDevice open);

// "cudaErrorInvalidValue (1): invalid argument" (the emulated device has no runtime strings: name and code).
std::string describe_error(cudaError_t error);

}  // namespace ot_cuda::addon
