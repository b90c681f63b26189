// Thin RAII wrappers for a stream and an event, pinned host memory, and
// host<->device copies, over DeviceApi (device_api.h). Nothing throws: the
// factories answer a value or a one-line error, operations a Status.
//
//   auto stream = Stream::create(api);                 // cudaStreamNonBlocking
//   if (!stream.ok()) log(stream.error);
//   copy_to_device_async(api, d_x, x, bytes, stream.value.handle());   // x must be pinned, or outlive the copy
//   PinnedStaging staging(api, 4 << 20);                // or stage through pinned memory:
//   staging.to_device(d_x, x, bytes, stream);           // x may be reused as soon as this returns
//   staging.to_host(y, d_y, bytes, stream);             // synchronous: y holds the data on return
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "device_api.h"

namespace ot_cuda::runtime {

// A value, or a one-line error.
template <class T>
struct Made {
  T value;
  std::string error;
  bool ok() const { return error.empty(); }
};

class Event {
 public:
  Event() = default;
  static Made<Event> create(DeviceApi& api) {
    EventHandle e = nullptr;
    Status s = api.event_create(&e);
    if (!s.ok()) return {Event(), s.error};
    return {Event(&api, e), {}};
  }
  Event(Event&& o) noexcept : api_(std::exchange(o.api_, nullptr)), handle_(std::exchange(o.handle_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = std::exchange(o.api_, nullptr);
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { reset(); }

  EventHandle handle() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  Status record(StreamHandle stream) const { return valid() ? api_->event_record(handle_, stream) : empty(); }
  // *done: whether the work recorded before it has completed.
  Status query(bool* done) const { return valid() ? api_->event_query(handle_, done) : empty(); }
  Status synchronize() const { return valid() ? api_->event_synchronize(handle_) : empty(); }

 private:
  Event(DeviceApi* api, EventHandle handle) : api_(api), handle_(handle) {}
  bool valid() const { return api_ != nullptr && handle_ != nullptr; }
  static Status empty() { return Status::failure("Event: no event (moved from or never created)"); }
  void reset() {
    if (valid()) (void)api_->event_destroy(handle_);
    api_ = nullptr;
    handle_ = nullptr;
  }
  DeviceApi* api_ = nullptr;
  EventHandle handle_ = nullptr;
};

class Stream {
 public:
  Stream() = default;
  // non_blocking: cudaStreamNonBlocking (does not synchronize with the legacy default stream).
  static Made<Stream> create(DeviceApi& api, bool non_blocking = true) {
    StreamHandle s = nullptr;
    Status st = api.stream_create(&s, non_blocking);
    if (!st.ok()) return {Stream(), st.error};
    return {Stream(&api, s), {}};
  }
  Stream(Stream&& o) noexcept : api_(std::exchange(o.api_, nullptr)), handle_(std::exchange(o.handle_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = std::exchange(o.api_, nullptr);
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { reset(); }  // cudaStreamDestroy: returns at once, pending work still completes

  StreamHandle handle() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  Status synchronize() const { return valid() ? api_->stream_synchronize(handle_) : empty(); }
  // Later work on this stream waits for `event` (cudaStreamWaitEvent).
  Status wait(const Event& event) const {
    if (!valid()) return empty();
    if (!event) return Status::failure("Stream::wait: no event (moved from or never created)");
    return api_->stream_wait_event(handle_, event.handle());
  }

 private:
  Stream(DeviceApi* api, StreamHandle handle) : api_(api), handle_(handle) {}
  bool valid() const { return api_ != nullptr && handle_ != nullptr; }
  static Status empty() { return Status::failure("Stream: no stream (moved from or never created)"); }
  void reset() {
    if (valid()) (void)api_->stream_destroy(handle_);
    api_ = nullptr;
    handle_ = nullptr;
  }
  DeviceApi* api_ = nullptr;
  StreamHandle handle_ = nullptr;
};

// Pinned (page-locked) host memory: cudaMallocHost / cudaFreeHost.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static Made<PinnedBuffer> create(DeviceApi& api, std::size_t bytes) {
    void* p = nullptr;
    Status s = api.host_alloc_pinned(&p, bytes);
    if (!s.ok()) return {PinnedBuffer(), s.error};
    return {PinnedBuffer(&api, p, bytes), {}};
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : api_(std::exchange(o.api_, nullptr)), data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = std::exchange(o.api_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { reset(); }

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  PinnedBuffer(DeviceApi* api, void* data, std::size_t bytes) : api_(api), data_(data), bytes_(bytes) {}
  void reset() {
    if (api_ != nullptr && data_ != nullptr) (void)api_->host_free_pinned(data_);
    api_ = nullptr;
    data_ = nullptr;
    bytes_ = 0;
  }
  DeviceApi* api_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// cudaMemcpyAsync on `stream`. The host side must stay valid (and, for an
// overlap with compute, be pinned) until the stream reaches the copy.
inline Status copy_to_device_async(DeviceApi& api, void* device_dst, const void* host_src, std::size_t bytes,
                                   StreamHandle stream) {
  if (bytes == 0) return {};
  return api.memcpy_async(device_dst, host_src, bytes, CopyKind::host_to_device, stream);
}
inline Status copy_to_host_async(DeviceApi& api, void* host_dst, const void* device_src, std::size_t bytes,
                                 StreamHandle stream) {
  if (bytes == 0) return {};
  return api.memcpy_async(host_dst, device_src, bytes, CopyKind::device_to_host, stream);
}

// Copies between pageable host memory and the device through one pinned
// buffer, chunk by chunk. to_device returns once the last chunk is enqueued
// (the source may then be reused: it has been copied into the staging
// buffer); a chunk waits for the previous copy out of the buffer (an event)
// before overwriting it. to_host is synchronous.
class PinnedStaging {
 public:
  PinnedStaging(DeviceApi& api, std::size_t chunk_bytes) : api_(api), chunk_bytes_(chunk_bytes) {}

  Status to_device(void* device_dst, const void* host_src, std::size_t bytes, StreamHandle stream) {
    if (Status s = ready(); !s.ok()) return s;
    auto* dst = static_cast<char*>(device_dst);
    const auto* src = static_cast<const char*>(host_src);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(chunk_bytes_, bytes - done);
      if (in_flight_) {
        if (Status s = event_.synchronize(); !s.ok()) return fail("to_device", s);
        in_flight_ = false;
      }
      std::memcpy(buffer_.data(), src + done, n);
      if (Status s = api_.memcpy_async(dst + done, buffer_.data(), n, CopyKind::host_to_device, stream); !s.ok()) {
        return fail("to_device", s);
      }
      if (Status s = event_.record(stream); !s.ok()) return fail("to_device", s);
      in_flight_ = true;
      done += n;
    }
    return {};
  }

  Status to_host(void* host_dst, const void* device_src, std::size_t bytes, StreamHandle stream) {
    if (Status s = ready(); !s.ok()) return s;
    auto* dst = static_cast<char*>(host_dst);
    const auto* src = static_cast<const char*>(device_src);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(chunk_bytes_, bytes - done);
      // Ordered after any earlier to_device chunk on the same stream; a chunk
      // from another stream still in the buffer is waited for.
      if (in_flight_) {
        if (Status s = event_.synchronize(); !s.ok()) return fail("to_host", s);
        in_flight_ = false;
      }
      if (Status s = api_.memcpy_async(buffer_.data(), src + done, n, CopyKind::device_to_host, stream); !s.ok()) {
        return fail("to_host", s);
      }
      if (Status s = event_.record(stream); !s.ok()) return fail("to_host", s);
      if (Status s = event_.synchronize(); !s.ok()) return fail("to_host", s);
      std::memcpy(dst + done, buffer_.data(), n);
      done += n;
    }
    return {};
  }

  // Waits for the last copy out of the buffer (before the source of a
  // to_device is released is not needed; before destroying the staging is).
  Status synchronize() {
    if (!in_flight_) return {};
    Status s = event_.synchronize();
    if (s.ok()) in_flight_ = false;
    return s;
  }
  ~PinnedStaging() { (void)synchronize(); }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

 private:
  // The pinned buffer and the event, made on first use.
  Status ready() {
    if (chunk_bytes_ == 0) return Status::failure("PinnedStaging: chunk size is 0");
    if (!buffer_.data()) {
      auto made = PinnedBuffer::create(api_, chunk_bytes_);
      if (!made.ok()) return Status::failure("PinnedStaging: pinned buffer of " + std::to_string(chunk_bytes_) +
                                             " bytes: " + made.error);
      buffer_ = std::move(made.value);
    }
    if (!event_) {
      auto made = Event::create(api_);
      if (!made.ok()) return Status::failure("PinnedStaging: event: " + made.error);
      event_ = std::move(made.value);
    }
    return {};
  }
  static Status fail(const char* what, const Status& s) {
    return Status::failure(std::string("PinnedStaging::") + what + ": " + s.error, s.code);
  }

  DeviceApi& api_;
  std::size_t chunk_bytes_;
  PinnedBuffer buffer_;
  Event event_;
  bool in_flight_ = false;
};

}  // namespace ot_cuda::runtime
