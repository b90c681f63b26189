#include "thread_pool.h"

#include <atomic>
#include <chrono>
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

// How long an idle thread spins before it sleeps, so that back-to-back small ops
// (a decode step's layers) do not pay a wake-up each. Timed rather than counted:
// a pause lasts 10 to 140 cycles depending on the CPU.
constexpr auto kSpin = std::chrono::microseconds(100);

thread_local bool t_in_pool = false;

/** Spins on `ready` for up to kSpin, then sleeps on `cv` (under `mutex`) until it holds. */
template <typename Ready>
void spin_then_wait(std::mutex& mutex, std::condition_variable& cv, Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0; !ready(); ++i) {
    OT_PAUSE();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, ready);
      return;
    }
  }
}

// A job's chunks go to whichever threads claim them: the caller works too, and
// it waits only for the chunks to be done, never for a worker to show up. On
// cores shared with other processes a worker may not run for a whole time
// slice; then the caller (or another worker) does its share instead of waiting
// for it. A worker that wakes late finds the job closed and touches nothing.
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
    done_chunks_.store(0, std::memory_order_relaxed);
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = generation_.load(std::memory_order_relaxed) + 1;
      open_.store(generation, std::memory_order_seq_cst);
      generation_.store(generation, std::memory_order_release);
    }
    wake_.notify_all();
    t_in_pool = true;
    work();
    t_in_pool = false;
    spin_then_wait(mutex_, done_, [&] { return done_chunks_.load(std::memory_order_acquire) == chunks_; });
    // Close the job, then wait for the workers inside it (they have no chunk left
    // to claim) to leave before its state is reused.
    open_.store(0, std::memory_order_seq_cst);
    for (int i = 0; active_.load(std::memory_order_seq_cst) != 0; ++i) {
      if (i < 1024) OT_PAUSE();
      else std::this_thread::yield();  // one was preempted inside: let it run
    }
  }

 private:
  void start(int threads) {
    quit_ = false;
    // The generation is read here, not in the new thread: a job posted before the
    // thread first runs must still count as new to it (else it would miss it).
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
      const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks_) return;
      const int64_t b = c * grain_;
      const int64_t e = b + grain_ < n_ ? b + grain_ : n_;
      fn_(ctx_, b, e);
      if (done_chunks_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks_) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  void loop(uint64_t seen) {
    t_in_pool = true;
    for (;;) {
      spin_then_wait(mutex_, wake_, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (quit_) return;
      // Enter the job only while it is open (seq_cst against run()'s close and wait).
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (open_.load(std::memory_order_seq_cst) == seen) work();
      active_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> open_{0};  // the generation of the job still taking workers, 0 when closed
  std::atomic<int> active_{0};     // workers inside a job
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_chunks_{0};
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
