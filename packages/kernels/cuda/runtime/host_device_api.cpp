// DeviceApi over host memory: the emulated device's (make_host_device_api in
// device_api.h). Kernels run to completion inside their launch there, so
// every call here is complete when it returns: events are always done and
// streams have nothing to wait for. Handles are distinct non-null tokens so
// the allocator's per-stream bookkeeping works as on a device.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "allocator.h"
#include "device_api.h"

namespace ot_cuda::runtime {
namespace {

class HostDeviceApi final : public DeviceApi {
 public:
  explicit HostDeviceApi(std::size_t total_bytes) : total_(total_bytes) {}

  Status malloc(void** ptr, std::size_t bytes) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > total_ - used_) {
      *ptr = nullptr;
      return Status::failure("cudaMalloc(" + std::to_string(bytes) +
                                 " bytes): cudaErrorMemoryAllocation (2): out of memory (emulated device, " +
                                 format_bytes(total_ - used_) + " free of " + format_bytes(total_) + ")",
                             2);
    }
    // 256-byte alignment, as cudaMalloc guarantees (vector loads rely on it).
    *ptr = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (*ptr == nullptr)
      return Status::failure("cudaMalloc(" + std::to_string(bytes) + " bytes): host out of memory", 2);
    sizes_[*ptr] = bytes;
    used_ += bytes;
    return {};
  }
  Status free(void* ptr) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return Status::failure("cudaFree: not an emulated device allocation", 1);
    used_ -= it->second;
    sizes_.erase(it);
    std::free(ptr);
    return {};
  }
  Status mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    *free_bytes = total_ - used_;
    *total_bytes = total_;
    return {};
  }

  Status event_create(EventHandle* event) override { return token(event); }
  Status event_record(EventHandle, StreamHandle) override { return {}; }
  Status event_query(EventHandle, bool* done) override {
    *done = true;
    return {};
  }
  Status event_synchronize(EventHandle) override { return {}; }
  Status event_destroy(EventHandle event) override { return drop(event); }

  Status stream_create(StreamHandle* stream, bool) override { return token(stream); }
  Status stream_destroy(StreamHandle stream) override { return drop(stream); }
  Status stream_synchronize(StreamHandle) override { return {}; }
  Status stream_wait_event(StreamHandle, EventHandle) override { return {}; }

  Status memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind, StreamHandle) override {
    if (bytes != 0) std::memmove(dst, src, bytes);
    return {};
  }
  Status memset_async(void* dst, int value, std::size_t bytes, StreamHandle) override {
    if (bytes != 0) std::memset(dst, value, bytes);
    return {};
  }
  Status host_alloc_pinned(void** ptr, std::size_t bytes) override {
    *ptr = std::malloc(bytes == 0 ? 1 : bytes);
    return *ptr != nullptr ? Status{} : Status::failure("cudaMallocHost: host out of memory", 2);
  }
  Status host_free_pinned(void* ptr) override {
    std::free(ptr);
    return {};
  }

 private:
  // A stream or event: one heap byte, so handles are unique and never null.
  static Status token(void** handle) {
    *handle = new char;
    return {};
  }
  static Status drop(void* handle) {
    delete static_cast<char*>(handle);
    return {};
  }

  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
  std::size_t total_, used_ = 0;
};

}  // namespace

std::unique_ptr<DeviceApi> make_host_device_api(std::size_t total_bytes) {
  return std::make_unique<HostDeviceApi>(total_bytes);
}

}  // namespace ot_cuda::runtime
