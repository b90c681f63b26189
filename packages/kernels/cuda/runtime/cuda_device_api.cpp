// DeviceApi over the CUDA runtime (device_api.h). Built only by nvcc, into the
// CUDA addon (scripts/build-cuda.mjs), with the runtime linked statically;
// the CPU-side tests use a fake instead. Device memory is cudaMalloc only: this
// file never asks for managed memory.
#include <cuda_runtime_api.h>

#include <string>

#include "device_api.h"

namespace ot_cuda::runtime {
namespace {

// "cudaMalloc(4194304 bytes): cudaErrorMemoryAllocation (2): out of memory"
Status check(cudaError_t error, const std::string& call) {
  if (error == cudaSuccess) return {};
  // Clear the runtime's copy of the last error (sticky errors stay sticky).
  (void)cudaGetLastError();
  const char* name = cudaGetErrorName(error);
  const char* text = cudaGetErrorString(error);
  std::string line = call + ": " + (name ? name : "cudaError") + " (" + std::to_string(static_cast<int>(error)) + ")";
  if (text) line += std::string(": ") + text;
  return Status::failure(line, static_cast<int>(error));
}

cudaMemcpyKind kind_of(CopyKind kind) {
  switch (kind) {
    case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
    case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
    case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

class CudaDeviceApi final : public DeviceApi {
 public:
  explicit CudaDeviceApi(int device) : device_(device) {}

  Status malloc(void** ptr, std::size_t bytes) override {
    if (Status s = use_device(); !s.ok()) return s;
    return check(cudaMalloc(ptr, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)");
  }
  Status free(void* ptr) override { return check(cudaFree(ptr), "cudaFree"); }
  Status mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) override {
    if (Status s = use_device(); !s.ok()) return s;
    return check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
  }

  Status event_create(EventHandle* event) override {
    if (Status s = use_device(); !s.ok()) return s;
    cudaEvent_t e = nullptr;
    Status s = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    *event = s.ok() ? static_cast<EventHandle>(e) : nullptr;
    return s;
  }
  Status event_record(EventHandle event, StreamHandle stream) override {
    return check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
                 "cudaEventRecord");
  }
  Status event_query(EventHandle event, bool* done) override {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    *done = e == cudaSuccess;
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return {};
    }
    return check(e, "cudaEventQuery");
  }
  Status event_synchronize(EventHandle event) override {
    return check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  }
  Status event_destroy(EventHandle event) override {
    return check(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
  }

  Status stream_create(StreamHandle* stream, bool non_blocking) override {
    if (Status s = use_device(); !s.ok()) return s;
    cudaStream_t s = nullptr;
    Status st = check(cudaStreamCreateWithFlags(&s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault),
                      "cudaStreamCreateWithFlags");
    *stream = st.ok() ? static_cast<StreamHandle>(s) : nullptr;
    return st;
  }
  Status stream_destroy(StreamHandle stream) override {
    return check(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
  }
  Status stream_synchronize(StreamHandle stream) override {
    return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }
  Status stream_wait_event(StreamHandle stream, EventHandle event) override {
    return check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
                 "cudaStreamWaitEvent");
  }

  Status memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, StreamHandle stream) override {
    return check(cudaMemcpyAsync(dst, src, bytes, kind_of(kind), static_cast<cudaStream_t>(stream)),
                 "cudaMemcpyAsync(" + std::to_string(bytes) + " bytes)");
  }
  Status memset_async(void* dst, int value, std::size_t bytes, StreamHandle stream) override {
    return check(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(stream)),
                 "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
  }
  Status host_alloc_pinned(void** ptr, std::size_t bytes) override {
    return check(cudaMallocHost(ptr, bytes), "cudaMallocHost(" + std::to_string(bytes) + " bytes)");
  }
  Status host_free_pinned(void* ptr) override { return check(cudaFreeHost(ptr), "cudaFreeHost"); }

 private:
  Status use_device() { return check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")"); }
  int device_;
};

}  // namespace

std::unique_ptr<DeviceApi> make_cuda_device_api(int device) { return std::make_unique<CudaDeviceApi>(device); }

}  // namespace ot_cuda::runtime
