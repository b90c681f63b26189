// A persistent thread pool that uses every core. The calling thread takes part, so
// a pool of N threads has N-1 workers. Jobs never allocate: the task is passed as
// a function pointer plus context.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace ot {

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

/** Runs fn over [0, n) in chunks of `grain` across the pool; returns when all are done. */
void parallel_for_raw(int64_t n, int64_t grain, RangeFn fn, void* ctx);

int num_threads();
/** Changes the pool size (1 = run everything on the caller). */
void set_num_threads(int n);

template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  auto trampoline = [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e); };
  parallel_for_raw(n, grain < 1 ? 1 : grain, trampoline, const_cast<void*>(static_cast<const void*>(&f)));
}

/** A grain that gives each thread about `per_thread` chunks of [0, n). */
inline int64_t grain_for(int64_t n, int per_thread = 4) {
  int64_t chunks = static_cast<int64_t>(num_threads()) * per_thread;
  int64_t g = (n + chunks - 1) / chunks;
  return g < 1 ? 1 : g;
}

}  // namespace ot
