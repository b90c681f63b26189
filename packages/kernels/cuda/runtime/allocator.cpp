// The caching device allocator (allocator.h).
#include "allocator.h"

#include <cstdio>
#include <iterator>

namespace ot_cuda::runtime {

std::size_t round_size(std::size_t bytes) {
  if (bytes == 0) return 0;
  const std::size_t g = bytes < kLargeThreshold ? kSmallGranularity : kLargeGranularity;
  if (bytes > SIZE_MAX - (g - 1)) return 0;  // no size class: the caller reports it
  return (bytes + g - 1) / g * g;
}

std::string format_bytes(std::size_t bytes) {
  char text[96];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  } else if (bytes < (std::size_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.2f KiB (%zu bytes)", b / 1024.0, bytes);
  } else if (bytes < (std::size_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.2f MiB (%zu bytes)", b / (1024.0 * 1024.0), bytes);
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB (%zu bytes)", b / (1024.0 * 1024.0 * 1024.0), bytes);
  }
  return text;
}

namespace {
std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}
}  // namespace

CachingAllocator::CachingAllocator(DeviceApi& api, AllocatorOptions options) : api_(api), options_(options) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block* b : pending_) {
    for (EventHandle e : b->events) {
      (void)api_.event_synchronize(e);
      (void)api_.event_destroy(e);
    }
    b->events.clear();
    cache_locked(b);
  }
  pending_.clear();
  while (!lru_.empty()) {
    Block* b = lru_.front();
    uncache_locked(b);
    (void)device_free_locked(b);
  }
  // Blocks still allocated belong to whoever holds them: their device memory is
  // left alone, only our bookkeeping goes.
  for (auto& [ptr, b] : blocks_) delete b;
  blocks_.clear();
}

void CachingAllocator::cache_locked(Block* b) {
  Pool& pool = pools_[Key{b->stream, b->size}];
  b->pool_it = pool.insert(pool.end(), b);
  b->lru_it = lru_.insert(lru_.end(), b);
}

void CachingAllocator::uncache_locked(Block* b) {
  auto pool = pools_.find(Key{b->stream, b->size});
  pool->second.erase(b->pool_it);
  if (pool->second.empty()) pools_.erase(pool);
  lru_.erase(b->lru_it);
}

Status CachingAllocator::device_free_locked(Block* b) {
  Status s = api_.free(b->ptr);
  ++stats_.device_frees;
  stats_.cached_bytes -= b->size;
  --stats_.cached_blocks;
  blocks_.erase(b->ptr);
  delete b;
  return s;
}

Status CachingAllocator::enforce_cap_locked() {
  Status first;
  while (stats_.cached_bytes > options_.max_cached_bytes && !lru_.empty()) {
    Block* b = lru_.front();
    uncache_locked(b);
    ++stats_.cap_releases;
    Status s = device_free_locked(b);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status CachingAllocator::process_events_locked() {
  Status first;
  for (auto it = pending_.begin(); it != pending_.end();) {
    Block* b = *it;
    bool all_done = true;
    for (EventHandle e : b->events) {
      bool done = false;
      Status s = api_.event_query(e, &done);
      if (!s.ok()) {
        if (first.ok()) first = s;
        all_done = false;
        break;
      }
      if (!done) {
        all_done = false;
        break;
      }
    }
    if (!all_done) {
      ++it;
      continue;
    }
    for (EventHandle e : b->events) (void)api_.event_destroy(e);
    b->events.clear();
    stats_.pending_bytes -= b->size;
    it = pending_.erase(it);
    cache_locked(b);
  }
  Status cap = enforce_cap_locked();
  return first.ok() ? cap : first;
}

Status CachingAllocator::process_events() {
  std::lock_guard<std::mutex> lock(mutex_);
  return process_events_locked();
}

Status CachingAllocator::empty_cache_locked() {
  Status first = process_events_locked();
  while (!lru_.empty()) {
    Block* b = lru_.front();
    uncache_locked(b);
    Status s = device_free_locked(b);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  return empty_cache_locked();
}

Allocation CachingAllocator::allocate(std::size_t bytes, StreamHandle stream) {
  if (bytes == 0) return {};
  const std::size_t size = round_size(bytes);
  if (size == 0) {
    return {nullptr, 0, "CachingAllocator: a request of " + format_bytes(bytes) + " has no size class (too large)"};
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Event failures only delay reuse; they are not this request's error.
  (void)process_events_locked();

  Block* b = nullptr;
  auto pool = pools_.find(Key{stream, size});
  if (pool != pools_.end()) {
    b = pool->second.back();  // the most recently freed
    uncache_locked(b);
    stats_.cached_bytes -= size;
    --stats_.cached_blocks;
    ++stats_.cache_hits;
  } else {
    void* ptr = nullptr;
    Status s = api_.malloc(&ptr, size);
    if (!s.ok()) {
      ++stats_.malloc_retries;
      Status emptied = empty_cache_locked();
      ptr = nullptr;
      s = api_.malloc(&ptr, size);
      if (!s.ok()) {
        std::size_t free_bytes = 0, total_bytes = 0;
        Status info = api_.mem_get_info(&free_bytes, &total_bytes);
        std::string message = "CachingAllocator: out of device memory: cudaMalloc of " + format_bytes(size) +
                              " (size class of a " + format_bytes(bytes) +
                              " request) failed after emptying the cache: " + s.error + "; device: ";
        message += info.ok() ? format_bytes(free_bytes) + " free of " + format_bytes(total_bytes)
                             : "free/total memory unknown (" + info.error + ")";
        message += "; this allocator: " + format_bytes(stats_.allocated_bytes) + " allocated, " +
                   format_bytes(stats_.cached_bytes) + " cached (" + format_bytes(stats_.pending_bytes) +
                   " waiting on events)";
        if (!emptied.ok()) message += "; emptying the cache failed: " + emptied.error;
        return {nullptr, 0, message};
      }
    }
    ++stats_.device_mallocs;
    b = new Block;
    b->ptr = ptr;
    b->size = size;
    b->stream = stream;
    blocks_[ptr] = b;
  }
  b->allocated = true;
  b->requested = bytes;
  b->other_streams.clear();
  stats_.allocated_bytes += size;
  stats_.requested_bytes += bytes;
  ++stats_.allocated_blocks;
  ++stats_.allocations;
  if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
  return {b->ptr, size, {}};
}

Status CachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = blocks_.find(ptr);
  if (found == blocks_.end() || !found->second->allocated) {
    return Status::failure("CachingAllocator::record_stream(" + pointer_text(ptr) +
                           "): not a block this allocator has handed out");
  }
  Block* b = found->second;
  if (stream == b->stream) return {};
  for (StreamHandle s : b->other_streams) {
    if (s == stream) return {};
  }
  b->other_streams.push_back(stream);
  return {};
}

Status CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = blocks_.find(ptr);
  if (found == blocks_.end() || !found->second->allocated) {
    return Status::failure("CachingAllocator::deallocate(" + pointer_text(ptr) +
                           "): not a block this allocator has handed out (or freed twice)");
  }
  Block* b = found->second;
  b->allocated = false;
  stats_.allocated_bytes -= b->size;
  stats_.requested_bytes -= b->requested;
  --stats_.allocated_blocks;
  b->requested = 0;
  stats_.cached_bytes += b->size;
  ++stats_.cached_blocks;

  if (b->other_streams.empty()) {
    cache_locked(b);
    return enforce_cap_locked();
  }
  // Used on other streams: one event on each, recorded now; reused once all have completed.
  Status failed;
  for (StreamHandle s : b->other_streams) {
    EventHandle e = nullptr;
    Status st = api_.event_create(&e);
    if (st.ok()) {
      st = api_.event_record(e, s);
      if (st.ok()) {
        b->events.push_back(e);
        continue;
      }
      (void)api_.event_destroy(e);
    }
    // No event: wait for the stream instead, so the block is still safe to reuse.
    Status sync = api_.stream_synchronize(s);
    if (!sync.ok() && failed.ok()) {
      failed = Status::failure("CachingAllocator::deallocate(" + pointer_text(ptr) + "): " + st.error + "; then " +
                               sync.error + " (the block is kept out of the cache)");
    }
  }
  b->other_streams.clear();
  if (!failed.ok()) {
    // Neither an event nor a synchronization: the block can never be known
    // free. Keep it allocated in our books forever (a leak, not a race).
    for (EventHandle e : b->events) (void)api_.event_destroy(e);
    b->events.clear();
    b->allocated = true;
    stats_.cached_bytes -= b->size;
    --stats_.cached_blocks;
    stats_.allocated_bytes += b->size;
    ++stats_.allocated_blocks;
    return failed;
  }
  if (b->events.empty()) {
    cache_locked(b);
    return enforce_cap_locked();
  }
  stats_.pending_bytes += b->size;
  pending_.push_back(b);
  return {};
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

}  // namespace ot_cuda::runtime
