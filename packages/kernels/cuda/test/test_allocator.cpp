// The caching device allocator and the stream/event/copy wrappers
// (runtime/allocator.h, runtime/streams.h) against a fake DeviceApi: device
// memory is host memory, events complete when the test says so, and every
// call is logged (a managed-memory request would show up as one).
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../runtime/allocator.h"
#include "../runtime/streams.h"
#include "check.h"

using namespace ot_cuda::runtime;

namespace {

struct FakeDevice final : DeviceApi {
  std::size_t total = std::size_t{1} << 30;
  std::size_t in_use = 0;
  std::map<void*, std::size_t> live;      // device allocations
  std::vector<std::size_t> malloc_sizes;  // every malloc asked for, failed ones too
  std::vector<std::string> calls;         // every call, by name
  int fail_next_mallocs = 0;              // force failures regardless of memory
  std::map<EventHandle, bool> events;     // event -> completed
  std::map<EventHandle, StreamHandle> recorded_on;
  std::set<void*> pinned;
  std::set<StreamHandle> streams;
  std::uintptr_t next_handle = 0x1000;

  Status malloc(void** ptr, std::size_t bytes) override {
    calls.push_back("malloc");
    malloc_sizes.push_back(bytes);
    if (fail_next_mallocs > 0 || in_use + bytes > total) {
      if (fail_next_mallocs > 0) --fail_next_mallocs;
      return Status::failure("cudaMalloc(" + std::to_string(bytes) + " bytes): cudaErrorMemoryAllocation (2): out of memory", 2);
    }
    *ptr = std::malloc(bytes);
    live[*ptr] = bytes;
    in_use += bytes;
    return {};
  }
  Status free(void* ptr) override {
    calls.push_back("free");
    auto it = live.find(ptr);
    if (it == live.end()) return Status::failure("cudaFree: cudaErrorInvalidValue (1): invalid argument", 1);
    in_use -= it->second;
    live.erase(it);
    std::free(ptr);
    return {};
  }
  Status mem_get_info(std::size_t* f, std::size_t* t) override {
    calls.push_back("mem_get_info");
    *f = total - in_use;
    *t = total;
    return {};
  }
  Status event_create(EventHandle* e) override {
    calls.push_back("event_create");
    *e = reinterpret_cast<EventHandle>(next_handle++);
    events[*e] = true;
    return {};
  }
  Status event_record(EventHandle e, StreamHandle s) override {
    calls.push_back("event_record");
    events[e] = false;  // completes when the test says so
    recorded_on[e] = s;
    return {};
  }
  Status event_query(EventHandle e, bool* done) override {
    calls.push_back("event_query");
    *done = events.at(e);
    return {};
  }
  Status event_synchronize(EventHandle e) override {
    calls.push_back("event_synchronize");
    events[e] = true;
    return {};
  }
  Status event_destroy(EventHandle e) override {
    calls.push_back("event_destroy");
    events.erase(e);
    recorded_on.erase(e);
    return {};
  }
  Status stream_create(StreamHandle* s, bool) override {
    calls.push_back("stream_create");
    *s = reinterpret_cast<StreamHandle>(next_handle++);
    streams.insert(*s);
    return {};
  }
  Status stream_destroy(StreamHandle s) override {
    calls.push_back("stream_destroy");
    streams.erase(s);
    return {};
  }
  Status stream_synchronize(StreamHandle) override {
    calls.push_back("stream_synchronize");
    return {};
  }
  Status stream_wait_event(StreamHandle, EventHandle) override {
    calls.push_back("stream_wait_event");
    return {};
  }
  Status memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind, StreamHandle) override {
    calls.push_back("memcpy_async");
    std::memcpy(dst, src, bytes);  // the fake's "device" is host memory
    return {};
  }
  Status memset_async(void* dst, int value, std::size_t bytes, StreamHandle) override {
    calls.push_back("memset_async");
    std::memset(dst, value, bytes);
    return {};
  }
  Status host_alloc_pinned(void** p, std::size_t bytes) override {
    calls.push_back("host_alloc_pinned");
    *p = std::malloc(bytes);
    pinned.insert(*p);
    return {};
  }
  Status host_free_pinned(void* p) override {
    calls.push_back("host_free_pinned");
    pinned.erase(p);
    std::free(p);
    return {};
  }
  // Completes every event recorded on `s`.
  void complete(StreamHandle s) {
    for (auto& [e, stream] : recorded_on) {
      if (stream == s) events[e] = true;
    }
  }
  int count(const std::string& name) const {
    int n = 0;
    for (const auto& c : calls) n += c == name;
    return n;
  }
  ~FakeDevice() override {
    for (auto& [p, n] : live) std::free(p);
  }
};

StreamHandle stream(int i) { return reinterpret_cast<StreamHandle>(static_cast<std::uintptr_t>(0x100 + i)); }
constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

TEST(allocator_size_classes) {
  CHECK_EQ(round_size(0), 0u);
  CHECK_EQ(round_size(1), 512u);
  CHECK_EQ(round_size(512), 512u);
  CHECK_EQ(round_size(513), 1024u);
  CHECK_EQ(round_size(MiB - 1), MiB);
  CHECK_EQ(round_size(MiB), 2 * MiB);
  CHECK_EQ(round_size(2 * MiB), 2 * MiB);
  CHECK_EQ(round_size(2 * MiB + 1), 4 * MiB);
  CHECK_EQ(round_size(SIZE_MAX), 0u);  // no size class

  FakeDevice dev;
  CachingAllocator alloc(dev);
  Allocation a = alloc.allocate(1000, stream(0));
  CHECK(a.ok());
  CHECK_EQ(a.size, 1024u);
  CHECK_EQ(dev.malloc_sizes.back(), 1024u);
  Allocation b = alloc.allocate(3 * MiB, stream(0));
  CHECK_EQ(dev.malloc_sizes.back(), 4 * MiB);
  Allocation z = alloc.allocate(0, stream(0));
  CHECK(z.ok());
  CHECK(z.ptr == nullptr);
  CHECK_EQ(dev.count("malloc"), 2);
  CHECK_THROWS(
      {
        Allocation huge = alloc.allocate(SIZE_MAX, stream(0));
        if (!huge.ok()) throw std::runtime_error(huge.error);
      },
      "no size class");
  CHECK(alloc.deallocate(a.ptr).ok());
  CHECK(alloc.deallocate(b.ptr).ok());
  CHECK(alloc.deallocate(nullptr).ok());
  // A foreign pointer, and a double free, are one-line errors.
  int local = 0;
  CHECK(alloc.deallocate(&local).error.find("not a block this allocator has handed out") != std::string::npos);
  CHECK(!alloc.deallocate(a.ptr).ok());
}

TEST(allocator_reuses_on_the_same_stream) {
  FakeDevice dev;
  CachingAllocator alloc(dev);
  Allocation a = alloc.allocate(1000, stream(0));
  CHECK(alloc.deallocate(a.ptr).ok());
  Allocation b = alloc.allocate(700, stream(0));  // same size class (1024)
  CHECK(b.ptr == a.ptr);
  CHECK_EQ(dev.count("malloc"), 1);
  CHECK_EQ(alloc.stats().cache_hits, 1u);
  // Another size class is a new block.
  Allocation c = alloc.allocate(2000, stream(0));
  CHECK(c.ptr != a.ptr);
  CHECK_EQ(dev.count("malloc"), 2);
  // A block cached for stream 0 never serves stream 1.
  CHECK(alloc.deallocate(b.ptr).ok());
  Allocation d = alloc.allocate(1000, stream(1));
  CHECK(d.ptr != a.ptr);
  CHECK_EQ(dev.count("malloc"), 3);
  // Most recently freed first.
  Allocation e = alloc.allocate(1000, stream(0));
  CHECK(e.ptr == a.ptr);
  Allocation f = alloc.allocate(1000, stream(0));
  CHECK(alloc.deallocate(e.ptr).ok());
  CHECK(alloc.deallocate(f.ptr).ok());
  Allocation g = alloc.allocate(1000, stream(0));
  CHECK(g.ptr == f.ptr);
}

TEST(allocator_waits_for_events_of_other_streams) {
  FakeDevice dev;
  CachingAllocator alloc(dev);
  Allocation a = alloc.allocate(4096, stream(0));
  CHECK(alloc.record_stream(a.ptr, stream(1)).ok());
  CHECK(alloc.record_stream(a.ptr, stream(1)).ok());  // once is enough
  CHECK(alloc.record_stream(a.ptr, stream(0)).ok());  // its own stream: nothing
  CHECK(alloc.deallocate(a.ptr).ok());
  // One event, recorded on stream 1 at free time.
  CHECK_EQ(dev.count("event_create"), 1);
  CHECK_EQ(dev.count("event_record"), 1);
  CHECK_EQ(dev.recorded_on.size(), 1u);
  CHECK(dev.recorded_on.begin()->second == stream(1));
  CHECK_EQ(alloc.stats().pending_bytes, 4096u);
  CHECK_EQ(alloc.stats().cached_bytes, 4096u);

  // Not reused while the event has not completed, not even on its own stream.
  Allocation b = alloc.allocate(4096, stream(0));
  CHECK(b.ptr != a.ptr);
  CHECK_EQ(dev.count("malloc"), 2);
  // empty_cache leaves a pending block alone.
  CHECK(alloc.empty_cache().ok());
  CHECK_EQ(dev.count("free"), 0);

  dev.complete(stream(1));
  Allocation c = alloc.allocate(4096, stream(0));
  CHECK(c.ptr == a.ptr);
  CHECK_EQ(dev.count("malloc"), 2);
  CHECK_EQ(dev.count("event_destroy"), 1);
  CHECK(dev.events.empty());
  CHECK_EQ(alloc.stats().pending_bytes, 0u);
  // record_stream lasts one allocation: freed again, no event.
  CHECK(alloc.deallocate(c.ptr).ok());
  CHECK_EQ(dev.count("event_record"), 1);
  CHECK(alloc.record_stream(c.ptr, stream(1)).error.find("not a block") != std::string::npos);
  CHECK(alloc.deallocate(b.ptr).ok());
}

TEST(allocator_caps_the_cache_releasing_least_recently_freed) {
  FakeDevice dev;
  CachingAllocator alloc(dev, {.max_cached_bytes = 6 * MiB});
  Allocation a = alloc.allocate(2 * MiB, stream(0));
  Allocation b = alloc.allocate(2 * MiB, stream(1));
  Allocation c = alloc.allocate(4 * MiB, stream(0));
  CHECK(alloc.deallocate(b.ptr).ok());  // freed first
  CHECK(alloc.deallocate(a.ptr).ok());
  CHECK_EQ(alloc.stats().cached_bytes, 4 * MiB);
  CHECK_EQ(dev.count("free"), 0);
  CHECK(alloc.deallocate(c.ptr).ok());  // 8 MiB cached > 6: b goes
  CHECK_EQ(dev.count("free"), 1);
  CHECK(dev.live.count(b.ptr) == 0);
  CHECK(dev.live.count(a.ptr) == 1);
  CHECK_EQ(alloc.stats().cached_bytes, 6 * MiB);
  CHECK_EQ(alloc.stats().cap_releases, 1u);
  // a is still cached and reused.
  Allocation d = alloc.allocate(2 * MiB, stream(0));
  CHECK(d.ptr == a.ptr);
  CHECK(alloc.deallocate(d.ptr).ok());

  // A cap of 0 caches nothing.
  FakeDevice dev0;
  CachingAllocator none(dev0, {.max_cached_bytes = 0});
  Allocation e = none.allocate(100, stream(0));
  CHECK(none.deallocate(e.ptr).ok());
  CHECK_EQ(dev0.count("free"), 1);
  CHECK_EQ(none.stats().cached_bytes, 0u);
}

TEST(allocator_empty_cache_frees_everything_cached) {
  FakeDevice dev;
  CachingAllocator alloc(dev);
  std::vector<void*> ptrs;
  for (std::size_t n : {100ul, 5000ul, 3 * MiB, 100ul}) ptrs.push_back(alloc.allocate(n, stream(0)).ptr);
  Allocation kept = alloc.allocate(64, stream(2));
  for (void* p : ptrs) CHECK(alloc.deallocate(p).ok());
  CHECK_EQ(alloc.stats().cached_blocks, 4u);
  CHECK(alloc.empty_cache().ok());
  CHECK_EQ(dev.count("free"), 4);
  CHECK_EQ(dev.live.size(), 1u);  // only the block still allocated
  CHECK_EQ(alloc.stats().cached_bytes, 0u);
  CHECK_EQ(alloc.stats().cached_blocks, 0u);
  CHECK_EQ(alloc.stats().allocated_bytes, 512u);
  CHECK(alloc.deallocate(kept.ptr).ok());
}

TEST(allocator_stats_and_peak) {
  FakeDevice dev;
  CachingAllocator alloc(dev);
  Allocation a = alloc.allocate(1000, stream(0));  // 1024
  Allocation b = alloc.allocate(3 * MiB, stream(0));  // 4 MiB
  AllocatorStats s = alloc.stats();
  CHECK_EQ(s.allocated_bytes, 1024 + 4 * MiB);
  CHECK_EQ(s.requested_bytes, 1000 + 3 * MiB);
  CHECK_EQ(s.peak_allocated_bytes, 1024 + 4 * MiB);
  CHECK_EQ(s.allocated_blocks, 2u);
  CHECK_EQ(s.device_mallocs, 2u);
  CHECK(alloc.deallocate(b.ptr).ok());
  s = alloc.stats();
  CHECK_EQ(s.allocated_bytes, 1024u);
  CHECK_EQ(s.cached_bytes, 4 * MiB);
  CHECK_EQ(s.reserved_bytes(), 1024 + 4 * MiB);
  CHECK_EQ(s.peak_allocated_bytes, 1024 + 4 * MiB);
  alloc.reset_peak();
  CHECK_EQ(alloc.stats().peak_allocated_bytes, 1024u);
  Allocation c = alloc.allocate(3 * MiB + 5, stream(0));  // cache hit
  s = alloc.stats();
  CHECK_EQ(s.device_mallocs, 2u);
  CHECK_EQ(s.cache_hits, 1u);
  CHECK_EQ(s.allocations, 3u);
  CHECK_EQ(s.cached_bytes, 0u);
  CHECK_EQ(s.peak_allocated_bytes, 1024 + 4 * MiB);
  CHECK(alloc.deallocate(a.ptr).ok());
  CHECK(alloc.deallocate(c.ptr).ok());
  CHECK_EQ(alloc.stats().allocated_bytes, 0u);
  CHECK_EQ(alloc.stats().requested_bytes, 0u);
}

TEST(allocator_malloc_failure_empties_the_cache_and_retries_once) {
  FakeDevice dev;
  dev.total = 10 * MiB;
  CachingAllocator alloc(dev);
  Allocation a = alloc.allocate(4 * MiB, stream(0));
  Allocation b = alloc.allocate(4 * MiB, stream(1));
  CHECK(alloc.deallocate(b.ptr).ok());  // cached, for stream 1
  // 4 MiB on stream 0: the first malloc fails (8 + 4 > 10), the cache is emptied, the retry succeeds.
  Allocation c = alloc.allocate(4 * MiB, stream(0));
  CHECK(c.ok());
  CHECK_EQ(alloc.stats().malloc_retries, 1u);
  CHECK_EQ(dev.count("malloc"), 4);
  CHECK_EQ(dev.count("free"), 1);
  CHECK_EQ(alloc.stats().cached_bytes, 0u);

  // Nothing left to release: one retry, then an error naming the sizes.
  Allocation d = alloc.allocate(3 * MiB, stream(0));
  CHECK(!d.ok());
  CHECK(d.ptr == nullptr);
  CHECK_EQ(dev.count("malloc"), 6);  // the try and one retry
  CHECK_EQ(alloc.stats().malloc_retries, 2u);
  for (const char* needle : {"out of device memory", "cudaMalloc of 4.00 MiB (4194304 bytes)",
                             "3.00 MiB (3145728 bytes) request", "cudaErrorMemoryAllocation",
                             "2.00 MiB (2097152 bytes) free of 10.00 MiB (10485760 bytes)",
                             "8.00 MiB (8388608 bytes) allocated"}) {
    if (d.error.find(needle) == std::string::npos) {
      ot_test::fail(__FILE__, __LINE__, "error lacks \"" + std::string(needle) + "\": " + d.error);
    }
  }
  CHECK(d.error.find('\n') == std::string::npos);
  // The error leaves the allocator usable.
  dev.fail_next_mallocs = 1;
  Allocation e = alloc.allocate(100, stream(0));  // fails once, succeeds on the retry
  CHECK(e.ok());
  CHECK(alloc.deallocate(a.ptr).ok());
  CHECK(alloc.deallocate(c.ptr).ok());
  CHECK(alloc.deallocate(e.ptr).ok());
}

TEST(allocator_never_requests_managed_memory) {
  // The fake's only way to device memory is DeviceApi::malloc (cudaMalloc):
  // every device byte the allocator holds came from it, and the interface has
  // no managed call to make. The real implementation's symbols are checked by
  // the nvcc build (cuda_device_api.cpp uses cudaMalloc only).
  FakeDevice dev;
  {
    CachingAllocator alloc(dev);
    for (int i = 0; i < 20; ++i) {
      Allocation a = alloc.allocate(static_cast<std::size_t>(i) * 100000 + 1, stream(i % 3));
      CHECK(a.ok());
      if (i % 2) CHECK(alloc.deallocate(a.ptr).ok());
    }
    for (const auto& c : dev.calls) {
      CHECK(c.find("managed") == std::string::npos);
    }
    CHECK_EQ(static_cast<std::size_t>(dev.count("malloc")), alloc.stats().device_mallocs);
  }
  // The destructor gave back every cached block (the 10 still allocated stay).
  CHECK_EQ(dev.live.size(), 10u);
}

TEST(streams_raii_and_staged_copies) {
  FakeDevice dev;
  {
    auto s = Stream::create(dev);
    CHECK(s.ok());
    CHECK_EQ(dev.streams.size(), 1u);
    auto e = Event::create(dev);
    CHECK(e.ok());
    CHECK(e.value.record(s.value.handle()).ok());
    bool done = true;
    CHECK(e.value.query(&done).ok());
    CHECK(!done);
    dev.complete(s.value.handle());
    CHECK(e.value.query(&done).ok());
    CHECK(done);
    CHECK(s.value.wait(e.value).ok());
    Stream moved = std::move(s.value);
    CHECK(!s.value);
    CHECK(!s.value.synchronize().ok());
    CHECK(moved.synchronize().ok());
    CHECK_EQ(dev.streams.size(), 1u);
  }
  CHECK_EQ(dev.streams.size(), 0u);
  CHECK(dev.events.empty());

  CachingAllocator alloc(dev);
  std::vector<unsigned char> host(10000), back(10000, 0);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  Allocation d = alloc.allocate(host.size(), stream(0));
  {
    PinnedStaging staging(dev, 4096);
    CHECK(staging.to_device(d.ptr, host.data(), host.size(), stream(0)).ok());
    CHECK_EQ(dev.count("memcpy_async"), 3);  // 4096 + 4096 + 1808
    CHECK_EQ(dev.count("event_synchronize"), 2);  // each chunk after the first waits for the previous one
    CHECK(staging.to_host(back.data(), d.ptr, back.size(), stream(0)).ok());
    CHECK(back == host);
    CHECK_EQ(dev.pinned.size(), 1u);
  }
  CHECK_EQ(dev.pinned.size(), 0u);
  std::vector<unsigned char> direct(10000, 0);
  CHECK(copy_to_host_async(dev, direct.data(), d.ptr, direct.size(), stream(0)).ok());
  CHECK(direct == host);
  CHECK(copy_to_device_async(dev, d.ptr, host.data(), 0, stream(0)).ok());
  PinnedStaging zero(dev, 0);
  CHECK(zero.to_device(d.ptr, host.data(), 1, stream(0)).error.find("chunk size is 0") != std::string::npos);
  CHECK(alloc.deallocate(d.ptr).ok());
}
