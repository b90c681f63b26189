// The device calls the runtime layer makes (allocator.h, streams.h), behind a
// small interface: the CUDA runtime implements it in cuda_device_api.cpp
// (compiled by nvcc into the addon only), and the tests implement it with a fake
// that hands out host memory and lets the test decide when events complete.
//
// Every call answers a Status: ok, or one line naming the call and the CUDA
// error ("cudaMalloc(4194304 bytes): cudaErrorMemoryAllocation (2): out of
// memory"). Nothing here throws or aborts. Handles are the CUDA runtime's
// (cudaStream_t, cudaEvent_t) as opaque pointers, so no CUDA header is needed
// to build or test the callers; a null stream is the legacy default stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace ot_cuda::runtime {

using StreamHandle = void*;  // cudaStream_t
using EventHandle = void*;   // cudaEvent_t

// The result of an operation: ok, or a one-line message (`code` is the
// cudaError_t value when the failure came from the runtime, else 0).
struct Status {
  std::string error;
  int code = 0;
  bool ok() const { return error.empty(); }
  static Status success() { return {}; }
  static Status failure(std::string message, int code = 0) { return {std::move(message), code}; }
};

enum class CopyKind { host_to_device, device_to_host, device_to_device };

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  // Device memory: cudaMalloc (never cudaMallocManaged) and cudaFree.
  virtual Status malloc(void** ptr, std::size_t bytes) = 0;
  virtual Status free(void* ptr) = 0;
  // cudaMemGetInfo.
  virtual Status mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) = 0;

  // Events (cudaEventCreateWithFlags(cudaEventDisableTiming), cudaEventRecord,
  // cudaEventQuery, cudaEventSynchronize, cudaEventDestroy). query sets *done:
  // cudaErrorNotReady is `false`, not an error.
  virtual Status event_create(EventHandle* event) = 0;
  virtual Status event_record(EventHandle event, StreamHandle stream) = 0;
  virtual Status event_query(EventHandle event, bool* done) = 0;
  virtual Status event_synchronize(EventHandle event) = 0;
  virtual Status event_destroy(EventHandle event) = 0;

  // Streams (cudaStreamCreateWithFlags(cudaStreamNonBlocking or default),
  // cudaStreamDestroy, cudaStreamSynchronize, cudaStreamWaitEvent).
  virtual Status stream_create(StreamHandle* stream, bool non_blocking) = 0;
  virtual Status stream_destroy(StreamHandle stream) = 0;
  virtual Status stream_synchronize(StreamHandle stream) = 0;
  virtual Status stream_wait_event(StreamHandle stream, EventHandle event) = 0;

  // cudaMemcpyAsync and cudaMemsetAsync, and pinned host memory (cudaMallocHost / cudaFreeHost).
  virtual Status memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                              StreamHandle stream) = 0;
  virtual Status memset_async(void* dst, int value, std::size_t bytes, StreamHandle stream) = 0;
  virtual Status host_alloc_pinned(void** ptr, std::size_t bytes) = 0;
  virtual Status host_free_pinned(void* ptr) = 0;
};

// The CUDA runtime's implementation on `device` (cudaSetDevice before each
// call that allocates or creates). Defined in cuda_device_api.cpp, which only
// nvcc builds (the addon); the CPU-side tests never link it.
std::unique_ptr<DeviceApi> make_cuda_device_api(int device);

// The emulated device's (host_device_api.cpp): device memory is host memory,
// every call completes before it returns, and mem_get_info reports
// `total_bytes` less what is allocated, so budgets behave as on a device.
std::unique_ptr<DeviceApi> make_host_device_api(std::size_t total_bytes);

}  // namespace ot_cuda::runtime
