#include "thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OT_PAUSE() _mm_pause()
#else
#define OT_PAUSE() ((void)0)
#endif

namespace ot {
namespace {

// Workers spin this many pauses (tens of microseconds) before sleeping, so that
// back-to-back small ops (a decode step's layers) do not pay a wake-up each.
constexpr int kSpinIterations = 20000;

thread_local bool t_in_pool = false;

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { start(threads); }
  ~ThreadPool() { stop(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    stop();
    start(threads);
  }

  void run(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
    const int64_t chunks = (n + grain - 1) / grain;
    // Serial when there is one chunk, when called from inside a job (nesting), or
    // when another thread is using the pool (e.g. two worker_threads).
    std::unique_lock<std::mutex> run_lock(run_mutex_, std::defer_lock);
    if (chunks <= 1 || workers_.empty() || t_in_pool || !run_lock.try_lock()) {
      fn(ctx, 0, n);
      return;
    }
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    grain_ = grain;
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    t_in_pool = true;
    work();
    t_in_pool = false;
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
      if (spin < kSpinIterations) {
        OT_PAUSE();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
      }
    }
  }

 private:
  void start(int threads) {
    quit_ = false;
    // The generation is read here, not in the new thread: a job posted before the
    // thread first runs must still count as new to it (else run() waits forever).
    const uint64_t current = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, current] { loop(current); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void work() {
    for (;;) {
      int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks_) return;
      int64_t b = c * grain_;
      int64_t e = b + grain_ < n_ ? b + grain_ : n_;
      fn_(ctx_, b, e);
    }
  }

  void loop(uint64_t seen) {
    t_in_pool = true;
    for (;;) {
      for (int spin = 0; generation_.load(std::memory_order_acquire) == seen; ++spin) {
        if (spin < kSpinIterations) {
          OT_PAUSE();
        } else {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = generation_.load(std::memory_order_acquire);
      if (quit_) return;
      work();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  bool quit_ = false;
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, grain_ = 1, chunks_ = 0;
};

int default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool& pool() {
  static ThreadPool instance(default_threads());
  return instance;
}

}  // namespace

void parallel_for_raw(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
  if (n <= 0) return;
  pool().run(n, grain, fn, ctx);
}

int num_threads() { return pool().size(); }

void set_num_threads(int n) { pool().resize(n < 1 ? 1 : n); }

}  // namespace ot
