// The CUDA addon's Node-API entry (opentinker_kernels_cuda.node, built by
// scripts/build-cuda.mjs). Today it binds one function, probe(), which asks the
// CUDA runtime what this machine has; the kernels' host launchers
// (kernels/*.cu, e.g. ot_cuda_rmsnorm_f32) are linked in beside it and get their
// bindings with the CUDA backend ("GPU workers").
//
// The runtime is linked statically (-cudart static), so this file loads on a
// machine with no driver at all: the runtime looks for libcuda.so.1 only when
// first called, and then reports cudaErrorInsufficientDriver (35), which probe()
// returns as data. Nothing here throws for a CUDA error.
#include <cuda_runtime_api.h>
#include <napi.h>

#include <string>

#include "device_binding.h"

namespace ot_cuda::addon {

// "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version"
std::string describe_error(cudaError_t error) {
  const char* name = cudaGetErrorName(error);
  const char* text = cudaGetErrorString(error);
  std::string line = name ? name : "cudaError";
  line += " (" + std::to_string(static_cast<int>(error)) + ")";
  if (text) line += std::string(": ") + text;
  return line;
}

namespace {

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  // In the order the TypeScript type lists them (filled in below).
  result.Set("ok", Napi::Boolean::New(env, false));
  result.Set("code", Napi::Number::New(env, 0));
  result.Set("error", env.Null());
  int runtime_version = 0;
  int driver_version = 0;
  // Neither needs a driver: the runtime's own version, and 0 when no driver is installed.
  if (cudaRuntimeGetVersion(&runtime_version) != cudaSuccess) runtime_version = 0;
  if (cudaDriverGetVersion(&driver_version) != cudaSuccess) driver_version = 0;
  result.Set("runtimeVersion", Napi::Number::New(env, runtime_version));
  result.Set("driverVersion", Napi::Number::New(env, driver_version));

  Napi::Array devices = Napi::Array::New(env);
  result.Set("devices", devices);
  auto fail = [&](cudaError_t error) {
    result.Set("ok", Napi::Boolean::New(env, false));
    result.Set("code", Napi::Number::New(env, static_cast<int>(error)));
    result.Set("error", Napi::String::New(env, describe_error(error)));
    // The runtime keeps a sticky copy of the last error; clear it for whoever calls next.
    (void)cudaGetLastError();
    return result;
  };

  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return fail(error);
  if (count <= 0) return fail(cudaErrorNoDevice);
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp prop{};
    error = cudaGetDeviceProperties(&prop, index);
    if (error != cudaSuccess) return fail(error);
    Napi::Object device = Napi::Object::New(env);
    device.Set("index", Napi::Number::New(env, index));
    device.Set("name", Napi::String::New(env, prop.name));
    device.Set("totalBytes", Napi::Number::New(env, static_cast<double>(prop.totalGlobalMem)));
    device.Set("computeCapability",
               Napi::String::New(env, std::to_string(prop.major) + "." + std::to_string(prop.minor)));
    devices.Set(static_cast<uint32_t>(index), device);
  }
  result.Set("ok", Napi::Boolean::New(env, true));
  result.Set("code", Napi::Number::New(env, 0));
  result.Set("error", env.Null());
  return result;
}

// A GPU as a Device: the CUDA runtime's DeviceApi on it, after checking it exists.
OpenedDevice open_cuda(int index) {
  OpenedDevice d;
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, index);
  if (error != cudaSuccess) {
    d.error = "cuda:" + std::to_string(index) + ": " + describe_error(error);
    (void)cudaGetLastError();
    return d;
  }
  d.api = runtime::make_cuda_device_api(index);
  d.name = "cuda:" + std::to_string(index);
  d.description = prop.name;
  return d;
}

}  // namespace
}  // namespace ot_cuda::addon

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, ot_cuda::addon::Probe, "probe"));
  ot_cuda::addon::register_device(env, exports, ot_cuda::addon::open_cuda);
  return exports;
}

NODE_API_MODULE(opentinker_kernels_cuda, Init)
