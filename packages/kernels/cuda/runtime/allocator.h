// A caching device allocator in the PyTorch style, over DeviceApi (plain
// cudaMalloc, never managed memory).
//
//   CachingAllocator alloc(api, {.max_cached_bytes = 4ull << 30});
//   Allocation a = alloc.allocate(bytes, stream);      // never throws
//   if (!a.ok()) { log(a.error); ... }
//   alloc.record_stream(a.ptr, other_stream);           // a is also used on other_stream
//   alloc.deallocate(a.ptr);                            // back to the cache
//
// - Requests are rounded to size classes: a multiple of 512 B below 1 MiB, of
//   2 MiB from 1 MiB up (round_size). A device allocation is exactly one size
//   class (no splitting of larger blocks), so a cached block serves only its
//   own size class.
// - Freed blocks are cached per (stream, size class) and reused by a later
//   request of that size class on the same stream, most recently freed first.
//   Work enqueued on that stream after the reuse is ordered after the work of
//   the previous owner, so no synchronization is needed.
// - A block also used on other streams (record_stream) gets, when freed, one
//   event recorded on each of those streams; it is reused only once every such
//   event has completed (polled at the next allocate; cudaEventQuery).
// - Cached bytes are capped (max_cached_bytes): past the cap, the least
//   recently freed cached blocks are given back with cudaFree.
// - When cudaMalloc fails, the cache is emptied (every cached block whose
//   events have completed is freed) and the malloc retried once; a second
//   failure is an error naming the request, its size class, the device's
//   free/total memory and what this allocator holds.
// - empty_cache() frees every cached block that is ready; stats() reports the
//   bytes allocated and cached, the peak allocated, and the number of device
//   mallocs and frees.
//
// Thread-safe (one mutex). The destructor frees the cached blocks (waiting for
// their pending events); blocks still allocated are left to the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device_api.h"

namespace ot_cuda::runtime {

inline constexpr std::size_t kSmallGranularity = 512;              // below kLargeThreshold
inline constexpr std::size_t kLargeThreshold = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::size_t kLargeGranularity = std::size_t{2} << 20;  // 2 MiB

// The size class of a request: 0 for 0, else a multiple of 512 below 1 MiB and
// of 2 MiB from 1 MiB up.
std::size_t round_size(std::size_t bytes);

// "1.50 MiB (1572864 bytes)"-style, for messages.
std::string format_bytes(std::size_t bytes);

struct AllocatorOptions {
  // The most bytes kept in the cache; beyond it the least recently freed
  // blocks are released. SIZE_MAX: no cap; 0: no caching at all.
  std::size_t max_cached_bytes = SIZE_MAX;
};

struct AllocatorStats {
  std::size_t allocated_bytes = 0;       // size-class bytes handed out and not yet freed
  std::size_t requested_bytes = 0;       // the bytes asked for by those allocations
  std::size_t cached_bytes = 0;          // freed blocks held (ready or waiting on events)
  std::size_t pending_bytes = 0;         // of cached_bytes, those waiting on events
  std::size_t peak_allocated_bytes = 0;  // the highest allocated_bytes so far
  std::size_t allocated_blocks = 0;
  std::size_t cached_blocks = 0;
  std::uint64_t allocations = 0;    // successful allocate() calls with bytes > 0
  std::uint64_t cache_hits = 0;     // of those, served from the cache
  std::uint64_t device_mallocs = 0;  // successful DeviceApi::malloc calls
  std::uint64_t device_frees = 0;    // DeviceApi::free calls
  std::uint64_t malloc_retries = 0;  // times a failed malloc emptied the cache and retried
  std::uint64_t cap_releases = 0;    // blocks released because of max_cached_bytes
  std::size_t reserved_bytes() const { return allocated_bytes + cached_bytes; }
};

struct Allocation {
  void* ptr = nullptr;  // null for a 0-byte request (which succeeds) or on error
  std::size_t size = 0;  // the size class
  std::string error;
  bool ok() const { return error.empty(); }
};

class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceApi& api, AllocatorOptions options = {});
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator();

  // Device memory for `bytes` bytes, for use on `stream`.
  Allocation allocate(std::size_t bytes, StreamHandle stream);
  // Gives a block back to the cache (null is a no-op). A pointer this
  // allocator did not hand out, or already freed, is an error.
  Status deallocate(void* ptr);
  // Marks an allocated block as used on `stream` too (a no-op for its own stream).
  Status record_stream(void* ptr, StreamHandle stream);
  // Frees every cached block that is ready (events completed); pending ones stay.
  Status empty_cache();
  // Completes what it can: moves blocks whose events have completed into the cache.
  Status process_events();

  AllocatorStats stats() const;
  void reset_peak();
  const AllocatorOptions& options() const { return options_; }

 private:
  struct Block;
  using Key = std::pair<StreamHandle, std::size_t>;  // (stream, size class)
  using Pool = std::list<Block*>;

  struct Block {
    void* ptr = nullptr;
    std::size_t size = 0;       // the size class (what was cudaMalloc'ed)
    std::size_t requested = 0;  // while allocated
    StreamHandle stream = nullptr;
    std::vector<StreamHandle> other_streams;  // record_stream, while allocated
    std::vector<EventHandle> events;          // while pending
    bool allocated = false;
    // While cached and ready: positions in pools_[key] and in lru_.
    Pool::iterator pool_it;
    std::list<Block*>::iterator lru_it;
  };

  Status process_events_locked();
  Status empty_cache_locked();
  Status device_free_locked(Block* block);           // cudaFree, forget the block
  void cache_locked(Block* block);                    // into pools_ and lru_ (most recent)
  void uncache_locked(Block* block);                  // out of pools_ and lru_
  Status enforce_cap_locked();

  DeviceApi& api_;
  AllocatorOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block*> blocks_;  // every block this allocator owns, by pointer
  std::map<Key, Pool> pools_;                 // ready cached blocks, most recently freed last
  std::list<Block*> lru_;                     // ready cached blocks, least recently freed first
  std::list<Block*> pending_;                 // freed blocks waiting on events
  AllocatorStats stats_;
};

}  // namespace ot_cuda::runtime
