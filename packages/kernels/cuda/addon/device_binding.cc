// The device side of both CUDA addons: a Device object per opened GPU (or the
// emulated device) that owns a caching allocator and a stream, copies between
// host and device, and runs every kernels/*.cu launcher on its stream.
//
//   const dev = addon.openDevice(0);
//   const p = dev.alloc(bytes);              // bigint device address, zero-filled (alloc(bytes, false): not)
//   dev.upload(p, float32Array); dev.download(p, bytes) → ArrayBuffer
//   dev.launch("rmsnorm_f32", x, w, y, rows, cols, eps)
//
// The real addon's DeviceApi is the CUDA runtime; the emulated addon's is
// host memory with kernels in the CPU execution (OT_CUDA_EMU). Everything
// else here is the same code in both. Copies are synchronous for now (the
// stream is synchronised before a download returns).
#include "device_binding.h"

#include <memory>
#include <string>
#include <unordered_map>

#include "../kernels/launchers.h"
#include "../runtime/allocator.h"
#include "../runtime/streams.h"
#include "launch_binding.h"

namespace ot_cuda::addon {
namespace {

using runtime::CachingAllocator;
using runtime::CopyKind;
using runtime::DeviceApi;
using runtime::Status;

// Runs a launcher with JS arguments 1, 2, … (0 is its name).
using Invoke = cudaError_t (*)(const Napi::CallbackInfo&, const char*, cudaStream_t);

// Every launcher, by the name JavaScript calls it: the one list of what the
// addons can run (a launcher missing from the link fails the build here).
#define OT_LAUNCHER(name)                                                                 \
  {                                                                                       \
#name, [](const Napi::CallbackInfo& info, const char* n,                              \
              cudaStream_t s) { return invoke_launcher(&ot_cuda_##name, info, 1, n, s); } \
  }
const std::unordered_map<std::string, Invoke>& launchers() {
  static const std::unordered_map<std::string, Invoke> table{
      OT_LAUNCHER(rmsnorm_f32),
      OT_LAUNCHER(rmsnorm_backward_f32),
      OT_LAUNCHER(rope_forward_f32),
      OT_LAUNCHER(rope_backward_f32),
      OT_LAUNCHER(swiglu_forward_f32),
      OT_LAUNCHER(swiglu_backward_f32),
      OT_LAUNCHER(embedding_forward_f32),
      OT_LAUNCHER(embedding_forward_bf16),
      OT_LAUNCHER(embedding_backward_f32),
      OT_LAUNCHER(adamw_step_f32),
      OT_LAUNCHER(sum_of_squares_f32),
      OT_LAUNCHER(gemm_bf16_xwt),
      OT_LAUNCHER(gemm_bf16_backward_input),
      OT_LAUNCHER(gemm_bf16_backward_weight),
      OT_LAUNCHER(gemm_f32_xwt),
      OT_LAUNCHER(lora_forward_f32),
      OT_LAUNCHER(lora_backward_f32),
      OT_LAUNCHER(cache_write_f32),
      OT_LAUNCHER(paged_attention_f32),
      OT_LAUNCHER(log_softmax_gather_f32),
      OT_LAUNCHER(log_softmax_gather_backward_f32),
      OT_LAUNCHER(sample_rows_f32),
      OT_LAUNCHER(attention_forward_f32),
      OT_LAUNCHER(attention_backward_f32),
      OT_LAUNCHER(add_in_place_f32),
      OT_LAUNCHER(scale_f32),
      OT_LAUNCHER(fill_f32),
      OT_LAUNCHER(fill_i32),
      OT_LAUNCHER(fill_f64),
      OT_LAUNCHER(add_bias_f32),
      OT_LAUNCHER(gather_rows_f32),
      OT_LAUNCHER(scatter_rows_f32),
      OT_LAUNCHER(copy_kv_blocks_f32),
      OT_LAUNCHER(sum_rows_f32),
      OT_LAUNCHER(reference_kl_f32),
      OT_LAUNCHER(unembed_logprobs_f32),
      OT_LAUNCHER(unembed_logprobs_backward_f32),
      OT_LAUNCHER(score_rows_f32),
      OT_LAUNCHER(gemm_f32_backward_input),
      OT_LAUNCHER(gemm_f32_backward_weight),
      OT_LAUNCHER(convert_f32_to_bf16),
      OT_LAUNCHER(convert_f32_to_bf16_split),
      OT_LAUNCHER(convert_bf16_to_f32),
      OT_LAUNCHER(lora_rows_forward_f32),
      OT_LAUNCHER(lora_rows_backward_f32),
  };
  return table;
}
#undef OT_LAUNCHER

// The scratch bytes a launcher needs, by its name, for the sizes JavaScript gives
// (ot_cuda_<name>_workspace_bytes in its .cu).
using Workspace = std::size_t (*)(const Napi::CallbackInfo&, const char*);
#define OT_WORKSPACE(name)                                                                               \
  {                                                                                                      \
#name, [](const Napi::CallbackInfo& info,                                                            \
              const char* n) { return invoke_workspace(&ot_cuda_##name##_workspace_bytes, info, 1, n); } \
  }
const std::unordered_map<std::string, Workspace>& workspaces() {
  static const std::unordered_map<std::string, Workspace> table{
      OT_WORKSPACE(unembed_logprobs_f32),
      OT_WORKSPACE(lora_rows_forward_f32),
      OT_WORKSPACE(lora_rows_backward_f32),
  };
  return table;
}
#undef OT_WORKSPACE

void check(const Napi::Env& env, const Status& status) {
  if (!status.ok()) throw Napi::Error::New(env, status.error);
}

void* address(const Napi::Value& v, const char* what) {
  bool lossless = false;
  if (!v.IsBigInt()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a device address (bigint)");
  const std::uint64_t a = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a device address within 64 bits");
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(a));
}

std::size_t byte_count(const Napi::Value& v, const char* what) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= 0 && d <= 9007199254740991.0 && d == static_cast<double>(static_cast<std::uint64_t>(d)))) {
    throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a byte count (a non-negative safe integer)");
  }
  return static_cast<std::size_t>(d);
}

class Device : public Napi::ObjectWrap<Device> {
 public:
  static Napi::Function Class(Napi::Env env) {
    return DefineClass(env, "Device",
                       {InstanceMethod<&Device::Alloc>("alloc"), InstanceMethod<&Device::Free>("free"),
                        InstanceMethod<&Device::Upload>("upload"), InstanceMethod<&Device::Download>("download"),
                        InstanceMethod<&Device::Copy>("copy"), InstanceMethod<&Device::Launch>("launch"),
                        InstanceMethod<&Device::MemInfo>("memInfo"), InstanceMethod<&Device::Stats>("stats"),
                        InstanceMethod<&Device::Synchronize>("synchronize"),
                        InstanceMethod<&Device::WorkspaceBytes>("workspaceBytes")});
  }

  Device(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Device>(info) {
    auto* opened = info[0].As<Napi::External<OpenedDevice>>().Data();
    api_ = std::move(opened->api);
    allocator_ = std::make_unique<CachingAllocator>(*api_);
    auto stream = runtime::Stream::create(*api_);
    if (!stream.error.empty()) throw Napi::Error::New(info.Env(), stream.error);
    stream_ = std::move(stream.value);
  }

 private:
  cudaStream_t stream() const { return static_cast<cudaStream_t>(stream_.handle()); }

  // alloc(bytes, zero = true): a block of at least `bytes` bytes (0 bytes: null),
  // zero-filled unless zero is false (scratch every byte of which a launch writes).
  Napi::Value Alloc(const Napi::CallbackInfo& info) {
    const std::size_t bytes = byte_count(info[0], "alloc: bytes");
    const bool zero = info.Length() < 2 || info[1].ToBoolean().Value();
    const runtime::Allocation a = allocator_->allocate(bytes, stream_.handle());
    if (!a.ok()) throw Napi::Error::New(info.Env(), a.error);
    if (zero) check(info.Env(), api_->memset_async(a.ptr, 0, bytes, stream_.handle()));
    return Napi::BigInt::New(info.Env(), static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(a.ptr)));
  }
  void Free(const Napi::CallbackInfo& info) { check(info.Env(), allocator_->deallocate(address(info[0], "free"))); }

  // upload(address, typedArray): the array's bytes to the device.
  void Upload(const Napi::CallbackInfo& info) {
    void* dst = address(info[0], "upload: address");
    if (!info[1].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "upload: data must be a typed array");
    const auto data = info[1].As<Napi::TypedArray>();
    const auto* src = static_cast<const std::uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
    check(info.Env(), api_->memcpy_async(dst, src, data.ByteLength(), CopyKind::host_to_device, stream_.handle()));
    // The caller may change its array as soon as this returns.
    check(info.Env(), stream_.synchronize());
  }

  // download(address, bytes) → ArrayBuffer, once every launch before it has completed.
  Napi::Value Download(const Napi::CallbackInfo& info) {
    const void* src = address(info[0], "download: address");
    const std::size_t bytes = byte_count(info[1], "download: bytes");
    Napi::ArrayBuffer out = Napi::ArrayBuffer::New(info.Env(), bytes);
    check(info.Env(), api_->memcpy_async(out.Data(), src, bytes, CopyKind::device_to_host, stream_.handle()));
    check(info.Env(), stream_.synchronize());
    return out;
  }

  // copy(dst, src, bytes), device to device, in stream order.
  void Copy(const Napi::CallbackInfo& info) {
    check(info.Env(),
          api_->memcpy_async(address(info[0], "copy: dst"), address(info[1], "copy: src"),
                             byte_count(info[2], "copy: bytes"), CopyKind::device_to_device, stream_.handle()));
  }

  // launch(name, ...args): the launcher's parameters but its stream.
  void Launch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!info[0].IsString()) throw Napi::TypeError::New(env, "launch: the first argument is a launcher name");
    const std::string name = info[0].As<Napi::String>();
    const auto it = launchers().find(name);
    if (it == launchers().end()) throw Napi::Error::New(env, "launch: no launcher named " + name);
    cudaError_t error;
    try {
      error = it->second(info, name.c_str(), stream());
    } catch (const Napi::Error&) {
      throw;
    } catch (const std::exception& e) {  // the emulated device's KernelError
      throw Napi::Error::New(env, name + ": " + e.what());
    }
    if (error != cudaSuccess) throw Napi::Error::New(env, name + ": " + describe_error(error));
  }

  Napi::Value MemInfo(const Napi::CallbackInfo& info) {
    std::size_t free_bytes = 0, total_bytes = 0;
    check(info.Env(), api_->mem_get_info(&free_bytes, &total_bytes));
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("freeBytes", static_cast<double>(free_bytes));
    o.Set("totalBytes", static_cast<double>(total_bytes));
    return o;
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    const runtime::AllocatorStats s = allocator_->stats();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("allocatedBytes", static_cast<double>(s.allocated_bytes));
    o.Set("cachedBytes", static_cast<double>(s.cached_bytes));
    o.Set("peakAllocatedBytes", static_cast<double>(s.peak_allocated_bytes));
    o.Set("allocations", static_cast<double>(s.allocations));
    o.Set("cacheHits", static_cast<double>(s.cache_hits));
    return o;
  }

  void Synchronize(const Napi::CallbackInfo& info) { check(info.Env(), stream_.synchronize()); }

  // workspaceBytes(launcher, ...sizes): the scratch bytes that launcher needs.
  Napi::Value WorkspaceBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string name = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    const auto it = workspaces().find(name);
    if (it == workspaces().end()) throw Napi::Error::New(env, "workspaceBytes: no workspace for launcher " + name);
    return Napi::Number::New(env, static_cast<double>(it->second(info, name.c_str())));
  }

  std::unique_ptr<DeviceApi> api_;
  std::unique_ptr<CachingAllocator> allocator_;
  runtime::Stream stream_;
};

}  // namespace

void register_device(Napi::Env env, Napi::Object exports, OpenDevice open) {
  Napi::Function device_class = Device::Class(env);
  auto* constructor = new Napi::FunctionReference(Napi::Persistent(device_class));
  env.SetInstanceData(constructor);
  exports.Set("openDevice", Napi::Function::New(env, [open](const Napi::CallbackInfo& info) -> Napi::Value {
                Napi::Env env = info.Env();
                const double index = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
                if (!(index >= 0 && index < 1024 && index == static_cast<int>(index))) {
                  throw Napi::TypeError::New(env, "openDevice: the device index is a non-negative integer");
                }
                OpenedDevice opened = open(static_cast<int>(index));
                if (!opened.error.empty()) throw Napi::Error::New(env, opened.error);
                Napi::Object device = env.GetInstanceData<Napi::FunctionReference>()->New(
                    {Napi::External<OpenedDevice>::New(env, &opened)});
                device.Set("name", opened.name);
                device.Set("description", opened.description);
                return device;
              }));
  Napi::Array names = Napi::Array::New(env);
  std::uint32_t i = 0;
  for (const auto& entry : launchers()) names.Set(i++, entry.first);
  exports.Set("launchers", names);
}

}  // namespace ot_cuda::addon
