// The CPU execution of the CUDA model (see emu.h): the block runner, its
// fiber scheduler, the warp exchange, and the shared-memory race log.
#include "emu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace ot_cuda::emu {

namespace bctx = boost::context;

std::vector<Mode> checking_modes(std::uint64_t seed) {
  std::vector<Mode> modes(5);
  modes[0].name = "plain";
  modes[1].name = "random-order";
  modes[1].options.random_order = true;
  modes[2].name = "nan-fill";
  modes[2].options.nan_fill = true;
  modes[3].name = "race-check";
  modes[3].options.race_check = true;
  modes[4].name = "all-checks";
  modes[4].options.random_order = modes[4].options.nan_fill = modes[4].options.race_check = true;
  for (auto& m : modes) m.options.seed = seed;
  return modes;
}

namespace {

// Fiber stacks, reused across blocks: mmap'ed once each (the kernel hands out
// pages lazily, so 1024 threads x 64 KiB costs only what they touch), with a
// PROT_NONE guard page below each so an overflow is a segfault, not a silent
// corruption of the neighbouring fiber's stack.
class StackPool {
 public:
  explicit StackPool(std::size_t usable) : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    usable_ = (usable + page_ - 1) / page_ * page_;
  }
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (void* top : free_) munmap(static_cast<char*>(top) - usable_ - page_, usable_ + page_);
  }
  bctx::stack_context take() {
    void* top;
    if (!free_.empty()) {
      top = free_.back();
      free_.pop_back();
    } else {
      void* base = mmap(nullptr, usable_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base == MAP_FAILED) throw std::bad_alloc();
      mprotect(base, page_, PROT_NONE);
      top = static_cast<char*>(base) + page_ + usable_;
      free_.reserve(++allocated_);  // room for every stack: give() never allocates
    }
    bctx::stack_context sc;
    sc.size = usable_;
    sc.sp = top;
    return sc;
  }
  void give(bctx::stack_context& sc) noexcept {
    if (free_.size() < free_.capacity()) {
      free_.push_back(sc.sp);
    } else {
      munmap(static_cast<char*>(sc.sp) - usable_ - page_, usable_ + page_);
    }
  }

 private:
  std::size_t page_, usable_;
  std::size_t allocated_ = 0;
  std::vector<void*> free_;
};

// This OS thread's pool for stacks of `usable` bytes, kept across launches: a
// launch then costs no mmap (the engine's steps are thousands of small launches).
StackPool& thread_stack_pool(std::size_t usable) {
  thread_local std::map<std::size_t, std::unique_ptr<StackPool>> pools;
  std::unique_ptr<StackPool>& pool = pools[usable];
  if (!pool) pool = std::make_unique<StackPool>(usable);
  return *pool;
}

// boost::context's StackAllocator concept over the pool.
struct PoolAlloc {
  StackPool* pool;
  bctx::stack_context allocate() { return pool->take(); }
  void deallocate(bctx::stack_context& sc) noexcept { pool->give(sc); }
};

struct Launch {
  Dim3 grid, block;
  unsigned threads;
  std::size_t shared_bytes;
  Options options;
  const void* fn;
  BodyFn body;
};

const char* op_name(detail::WarpOp op) {
  switch (op) {
    case detail::WarpOp::ShflIdx:
      return "shfl_sync";
    case detail::WarpOp::ShflUp:
      return "shfl_up_sync";
    case detail::WarpOp::ShflDown:
      return "shfl_down_sync";
    case detail::WarpOp::ShflBfly:
      return "shfl_xor_sync";
    case detail::WarpOp::Ballot:
      return "ballot_sync";
    case detail::WarpOp::Any:
      return "any_sync";
    case detail::WarpOp::All:
      return "all_sync";
    case detail::WarpOp::Mma:
      return "mma_m16n8k16_bf16_f32";
  }
  return "?";
}

std::string hex(std::uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// PTX ISA, shfl.sync: the lane a lane reads, given its b and c operands. A
// lane whose source falls outside its segment (pval false) reads its own value.
unsigned shfl_source(detail::WarpOp op, unsigned lane, std::uint32_t b, std::uint32_t c) {
  const int bval = static_cast<int>(b & 0x1f), cval = static_cast<int>(c & 0x1f);
  const int segmask = static_cast<int>((c >> 8) & 0x1f);
  const int l = static_cast<int>(lane);
  const int max_lane = (l & segmask) | (cval & ~segmask);
  const int min_lane = l & segmask;
  int j = l;
  bool pval = false;
  switch (op) {
    case detail::WarpOp::ShflUp:
      j = l - bval;
      pval = j >= max_lane;
      break;
    case detail::WarpOp::ShflDown:
      j = l + bval;
      pval = j <= max_lane;
      break;
    case detail::WarpOp::ShflBfly:
      j = l ^ bval;
      pval = j <= max_lane;
      break;
    case detail::WarpOp::ShflIdx:
      j = min_lane | (bval & ~segmask);
      pval = j <= max_lane;
      break;
    default:
      break;
  }
  return static_cast<unsigned>(pval ? j : l);
}

// Who touched a byte in the current interval: one id, or "several".
struct Who {
  std::int32_t id = -1;
  bool many = false;
  bool other_than(std::int32_t t) const { return many || (id >= 0 && id != t); }
  void add(std::int32_t t) {
    if (id < 0) {
      id = t;
    } else if (id != t) {
      many = true;
    }
  }
};

// One byte of shared memory in the race log. `epoch` says which interval the
// entry belongs to, so starting a new interval is O(1) (bump the epoch).
struct Cell {
  std::uint64_t epoch = 0;
  Who wrote, read, atomic;
};

enum class Status : std::uint8_t { Ready, AtBarrier, AtWarp, Done };

struct ThreadRec {
  bctx::fiber fiber;  // the suspended thread (empty while it runs or once done)
  bctx::fiber sink;   // inside the fiber: the scheduler to switch back to
  Status status = Status::Ready;
  Ctx ctx;
};

struct WarpSlot {
  unsigned arrived = 0, exited = 0;
  detail::WarpOp op{};
  unsigned bytes = 0, first_tid = 0;
  std::array<std::uint64_t, kWarpSize> val{}, result{};
  std::array<std::uint32_t, kWarpSize> b{}, c{}, mask{};
  // mma_exchange: each lane's A (4 b32), B (2 b32) and C (4 f32) registers,
  // and its D registers once the warp has completed.
  std::array<std::array<std::uint32_t, 6>, kWarpSize> mma_ab{};
  std::array<std::array<float, 4>, kWarpSize> mma_c{}, mma_d{};
};

// The fragment layout of mma.m16n8k16 with .bf16 A/B and .f32 C/D (PTX ISA,
// "Matrix Fragments for mma.m16n8k16 with floating point type", in the
// mma section of "Warp Level Matrix Multiply-Accumulate Instructions"):
// groupID = lane >> 2, threadID_in_group = lane % 4, and for element i of a
// lane's fragment (two bf16 per b32 register, element 2r in the low half of
// register r, 2r+1 in the high half):
//   A a0..a7: row = groupID + 8 * ((i >> 1) & 1), col = 2 * tig + (i & 1) + 8 * (i >> 2)
//   B b0..b3: row (k) = 2 * tig + (i & 1) + 8 * (i >> 1), col (n) = groupID
//   C/D c0..c3: row = groupID + 8 * (i >> 1), col = 2 * tig + (i & 1)
struct MmaCoord {
  unsigned row, col;
};
MmaCoord mma_a_coord(unsigned lane, unsigned i) {
  return {(lane >> 2) + 8 * ((i >> 1) & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)};
}
MmaCoord mma_b_coord(unsigned lane, unsigned i) { return {2 * (lane % 4) + (i & 1) + 8 * (i >> 1), lane >> 2}; }
MmaCoord mma_cd_coord(unsigned lane, unsigned i) { return {(lane >> 2) + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)}; }

float bf16_to_f32(std::uint32_t bits16) {
  const std::uint32_t bits = (bits16 & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

// Runs blocks one at a time on the calling OS thread; its shared memory and
// race log are reused from one block to the next, its stacks across launches.
class Block {
 public:
  explicit Block(const Launch& launch)
      : launch_(launch),
        pool_(thread_stack_pool(launch.options.stack_bytes)),
        threads_(launch.threads),
        warps_((launch.threads + kWarpSize - 1) / kWarpSize),
        smem_(new (std::align_val_t{128}) unsigned char[std::max<std::size_t>(launch.shared_bytes, 1)]),
        cells_(launch.options.race_check ? launch.shared_bytes : 0) {
    ready_.reserve(launch.threads);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { ::operator delete[](smem_, std::align_val_t{128}); }

  void run(std::uint64_t linear_block);

  void barrier(unsigned tid);
  std::uint64_t warp_exchange(unsigned tid, detail::WarpOp op, unsigned mask, std::uint64_t bits, unsigned bytes,
                              std::uint32_t b, std::uint32_t c);
  void mma_exchange(unsigned tid, const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d);
  void log_shared(unsigned tid, std::size_t off, std::size_t bytes, detail::Access access);
  [[noreturn]] void fail(const std::string& what) const {
    const Dim3 b = block_idx_;
    throw KernelError("ot_cuda::emu: block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                      std::to_string(b.z) + "): " + what);
  }
  std::string who(unsigned tid) const {
    const Dim3 t = threads_[tid].ctx.thread_idx();
    return "thread (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) + ") [warp " +
           std::to_string(tid / kWarpSize) + " lane " + std::to_string(tid % kWarpSize) + "]";
  }

 private:
  void suspend(unsigned tid) {
    ThreadRec& t = threads_[tid];
    t.sink = std::move(t.sink).resume();
  }
  void make_ready(unsigned tid) {
    threads_[tid].status = Status::Ready;
    ready_.push_back(tid);
  }
  unsigned pick() {
    if (launch_.options.random_order && ready_.size() - head_ > 1) {
      std::uniform_int_distribution<std::size_t> d(head_, ready_.size() - 1);
      std::swap(ready_[head_], ready_[d(rng_)]);
    }
    const unsigned tid = ready_[head_++];
    if (head_ == ready_.size()) {
      ready_.clear();
      head_ = 0;
    }
    return tid;
  }
  void complete_mma(WarpSlot& s);
  unsigned lanes_in_warp(unsigned w) const { return std::min<unsigned>(kWarpSize, launch_.threads - w * kWarpSize); }
  void on_exit(unsigned tid);
  void complete_warp(unsigned w);
  std::string deadlock_message() const;
  void abandon() {
    // Destroying a suspended fiber unwinds its stack (boost throws
    // forced_unwind inside it), so locals of the abandoned threads are freed.
    for (auto& t : threads_) t.fiber = bctx::fiber();
  }

  const Launch& launch_;
  StackPool& pool_;
  std::vector<ThreadRec> threads_;
  std::vector<WarpSlot> warps_;
  unsigned char* smem_;
  std::vector<Cell> cells_;
  std::uint64_t epoch_ = 0;     // race log interval id, unique across blocks
  unsigned interval_ = 0;       // sync() calls completed in this block
  std::vector<unsigned> ready_;  // runnable threads: ready_[head_..]
  std::size_t head_ = 0;
  std::mt19937_64 rng_;
  Dim3 block_idx_;
  unsigned at_barrier_ = 0, exited_ = 0, done_ = 0, first_exited_ = 0;
  bool failed_ = false;
  std::exception_ptr error_;
};

void Block::run(std::uint64_t linear_block) {
  const Launch& L = launch_;
  const std::uint64_t gx = L.grid.x, gy = L.grid.y;
  block_idx_ = Dim3{static_cast<unsigned>(linear_block % gx), static_cast<unsigned>(linear_block / gx % gy),
                    static_cast<unsigned>(linear_block / (gx * gy))};
  // (b): 0xff bytes are NaN in every float format and -1 in every integer
  // one; without the check a block starts from zeros (deterministic).
  std::memset(smem_, L.options.nan_fill ? 0xff : 0, L.shared_bytes);
  ++epoch_;
  interval_ = at_barrier_ = exited_ = done_ = 0;
  failed_ = false;
  error_ = nullptr;
  // Seeded per block, so the order does not depend on which worker runs it.
  rng_.seed(L.options.seed * 0x9e3779b97f4a7c15ull + linear_block);
  for (auto& w : warps_) w.arrived = w.exited = 0;
  ready_.clear();
  head_ = 0;

  for (unsigned tid = 0; tid < L.threads; ++tid) {
    ThreadRec& t = threads_[tid];
    Ctx& c = t.ctx;
    c.block_ = this;
    c.tid_ = tid;
    c.thread_idx_ = Dim3{tid % L.block.x, tid / L.block.x % L.block.y, tid / (L.block.x * L.block.y)};
    c.block_idx_ = block_idx_;
    c.block_dim_ = L.block;
    c.grid_dim_ = L.grid;
    c.smem_ = smem_;
    c.smem_bytes_ = L.shared_bytes;
    c.race_check_ = L.options.race_check;
    t.fiber = bctx::fiber(std::allocator_arg, PoolAlloc{&pool_}, [this, tid](bctx::fiber&& sink) {
      ThreadRec& self = threads_[tid];
      self.sink = std::move(sink);
      try {
        launch_.body(launch_.fn, self.ctx);
        on_exit(tid);
      } catch (const bctx::detail::forced_unwind&) {
        throw;  // boost's own unwinding of an abandoned fiber: let it through
      } catch (...) {
        // An exception must not cross a fiber switch: park it and tell the
        // scheduler, which abandons the block and rethrows it.
        if (!failed_) error_ = std::current_exception();
        failed_ = true;
      }
      self.status = Status::Done;
      ++done_;
      return std::move(self.sink);
    });
    make_ready(tid);
  }

  while (!failed_ && head_ < ready_.size()) {
    ThreadRec& t = threads_[pick()];
    t.fiber = std::move(t.fiber).resume();
  }
  if (failed_) {
    abandon();
    std::rethrow_exception(error_);
  }
  if (done_ != L.threads) {
    const std::string msg = deadlock_message();
    abandon();
    fail(msg);
  }
}

void Block::barrier(unsigned tid) {
  if (exited_ > 0) {
    fail(who(tid) + " reached sync() after " + who(first_exited_) +
         " returned: every thread of a block must reach every sync()");
  }
  threads_[tid].status = Status::AtBarrier;
  if (++at_barrier_ == launch_.threads) {
    // Everyone arrived: a new interval starts (for the race log), and all
    // threads become runnable again, in thread order or shuffled by pick().
    at_barrier_ = 0;
    ++interval_;
    ++epoch_;
    for (unsigned i = 0; i < launch_.threads; ++i) make_ready(i);
  }
  suspend(tid);
}

std::uint64_t Block::warp_exchange(unsigned tid, detail::WarpOp op, unsigned mask, std::uint64_t bits,
                                   unsigned bytes, std::uint32_t b, std::uint32_t c) {
  const unsigned w = tid / kWarpSize, lane = tid % kWarpSize;
  WarpSlot& s = warps_[w];
  if (s.exited > 0) {
    fail(who(tid) + " called " + op_name(op) + " after a lane of its warp returned: the emulator runs warps " +
         "converged, every lane must take part");
  }
  if (s.arrived == 0) {
    s.op = op;
    s.bytes = bytes;
    s.first_tid = tid;
  } else if (s.op != op || s.bytes != bytes) {
    fail("warp divergence: " + who(tid) + " called " + op_name(op) + " (" + std::to_string(bytes) +
         " bytes) while " + who(s.first_tid) + " waits in " + op_name(s.op) + " (" + std::to_string(s.bytes) +
         " bytes): every lane of a warp must make the same warp operation");
  }
  s.val[lane] = bits;
  s.b[lane] = b;
  s.c[lane] = c;
  s.mask[lane] = mask;
  threads_[tid].status = Status::AtWarp;
  if (++s.arrived == lanes_in_warp(w)) complete_warp(w);
  // Even the last lane yields, so that in random_order mode the lanes leave
  // the exchange in a random order too.
  suspend(tid);
  return s.result[lane];
}

void Block::mma_exchange(unsigned tid, const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d) {
  WarpSlot& s = warps_[tid / kWarpSize];
  const unsigned lane = tid % kWarpSize;
  // The lane's own slots: no other lane reads them until the warp completes,
  // and the previous exchange's D was read before this lane could get here.
  for (unsigned i = 0; i < 4; ++i) s.mma_ab[lane][i] = a[i];
  for (unsigned i = 0; i < 2; ++i) s.mma_ab[lane][4 + i] = b[i];
  for (unsigned i = 0; i < 4; ++i) s.mma_c[lane][i] = c[i];
  // The arrival, divergence and mask checks are the shuffles' (mma.sync
  // .aligned: every lane of the warp executes the same mma).
  warp_exchange(tid, detail::WarpOp::Mma, kFullMask, 0, 40, 0, 0);
  for (unsigned i = 0; i < 4; ++i) d[i] = s.mma_d[lane][i];
}

void Block::complete_mma(WarpSlot& s) {
  float A[16][16], B[16][8], C[16][8];
  for (unsigned l = 0; l < kWarpSize; ++l) {
    for (unsigned i = 0; i < 8; ++i) {
      const MmaCoord ca = mma_a_coord(l, i);
      A[ca.row][ca.col] = bf16_to_f32(s.mma_ab[l][i / 2] >> (16 * (i % 2)));
    }
    for (unsigned i = 0; i < 4; ++i) {
      const MmaCoord cb = mma_b_coord(l, i);
      B[cb.row][cb.col] = bf16_to_f32(s.mma_ab[l][4 + i / 2] >> (16 * (i % 2)));
      const MmaCoord cc = mma_cd_coord(l, i);
      C[cc.row][cc.col] = s.mma_c[l][i];
    }
  }
  for (unsigned l = 0; l < kWarpSize; ++l) {
    for (unsigned i = 0; i < 4; ++i) {
      const MmaCoord cd = mma_cd_coord(l, i);
      // A bf16 x bf16 product has at most 16 significant bits: exact in f32,
      // so only the additions round, in this fixed order (k = 0..15).
      float acc = C[cd.row][cd.col];
      for (unsigned k = 0; k < 16; ++k) acc += A[cd.row][k] * B[k][cd.col];
      s.mma_d[l][i] = acc;
    }
  }
}

void Block::complete_warp(unsigned w) {
  WarpSlot& s = warps_[w];
  const unsigned lanes = lanes_in_warp(w);
  if (s.op == detail::WarpOp::Mma && lanes != kWarpSize) {
    fail(who(w * kWarpSize) + " called " + op_name(s.op) + " in a warp of " + std::to_string(lanes) +
         " lanes: mma.sync needs all 32 lanes of a full warp");
  }
  const std::uint32_t present = lanes == kWarpSize ? kFullMask : (1u << lanes) - 1;
  for (unsigned l = 0; l < lanes; ++l) {
    if (s.mask[l] != present) {
      fail(who(w * kWarpSize + l) + " passed mask " + hex(s.mask[l]) + " to " + op_name(s.op) +
           " but the warp's lanes are " + hex(present) +
           ": partial masks (divergent warp operations) are not modelled by the emulator");
    }
  }
  switch (s.op) {
    case detail::WarpOp::Ballot:
    case detail::WarpOp::Any:
    case detail::WarpOp::All: {
      std::uint32_t ballot = 0;
      for (unsigned l = 0; l < lanes; ++l) ballot |= (s.val[l] != 0 ? 1u : 0u) << l;
      const std::uint64_t r = s.op == detail::WarpOp::Ballot ? ballot
                              : s.op == detail::WarpOp::Any  ? (ballot != 0)
                                                             : (ballot == present);
      for (unsigned l = 0; l < lanes; ++l) s.result[l] = r;
      break;
    }
    case detail::WarpOp::Mma:
      complete_mma(s);
      break;
    default:
      for (unsigned l = 0; l < lanes; ++l) {
        const unsigned j = shfl_source(s.op, l, s.b[l], s.c[l]);
        if (j >= lanes) {
          fail(who(w * kWarpSize + l) + " reads lane " + std::to_string(j) + " in " + op_name(s.op) +
               ", a lane the warp does not have (undefined in PTX)");
        }
        s.result[l] = s.val[j];
      }
  }
  s.arrived = 0;
  for (unsigned l = 0; l < lanes; ++l) make_ready(w * kWarpSize + l);
}

void Block::on_exit(unsigned tid) {
  if (exited_++ == 0) first_exited_ = tid;
  WarpSlot& s = warps_[tid / kWarpSize];
  ++s.exited;
  if (at_barrier_ > 0) {
    fail(who(tid) + " returned while " + std::to_string(at_barrier_) +
         " threads wait at sync(): every thread of a block must reach every sync()");
  }
  if (s.arrived > 0) {
    fail(who(tid) + " returned while " + std::to_string(s.arrived) + " lanes of its warp wait in " +
         op_name(s.op));
  }
}

std::string Block::deadlock_message() const {
  std::string msg = "deadlock: no thread can run; " + std::to_string(at_barrier_) + " of " +
                    std::to_string(launch_.threads) + " threads wait at sync()";
  for (unsigned w = 0; w < warps_.size(); ++w) {
    if (warps_[w].arrived > 0) {
      msg += "; " + std::to_string(warps_[w].arrived) + " of " + std::to_string(lanes_in_warp(w)) +
             " lanes of warp " + std::to_string(w) + " wait in " + op_name(warps_[w].op);
    }
  }
  return msg + " (a sync() or warp operation that not every thread reaches)";
}

void Block::log_shared(unsigned tid, std::size_t off, std::size_t bytes, detail::Access access) {
  const auto t = static_cast<std::int32_t>(tid);
  for (std::size_t k = off; k < off + bytes; ++k) {
    Cell& c = cells_[k];
    if (c.epoch != epoch_) c = Cell{epoch_, {}, {}, {}};
    const Who* clash = nullptr;
    const char* what = "";
    if (c.wrote.other_than(t)) {
      clash = &c.wrote;
      what = "wrote";
    } else if (access != detail::Access::Read && c.read.other_than(t)) {
      clash = &c.read;
      what = "read";
    } else if (access != detail::Access::Atomic && c.atomic.other_than(t)) {
      clash = &c.atomic;
      what = "atomically updated";
    }
    if (clash != nullptr) {
      const char* verb = access == detail::Access::Read    ? "reads"
                         : access == detail::Access::Write ? "writes"
                                                           : "atomically updates";
      // With several earlier accessors the log keeps only the first; if that
      // is this thread itself, the others are unnamed.
      const std::string others = clash->id == t ? std::string("other threads")
                                                : who(static_cast<unsigned>(clash->id)) +
                                                      (clash->many ? " (and others)" : "");
      fail("shared-memory race: " + who(tid) + " " + verb + " byte " + std::to_string(k) + " that " + others +
           " " + what + (interval_ == 0 ? " since the block started" : " since sync() #" + std::to_string(interval_)) +
           ", with no sync() between them");
    }
    switch (access) {
      case detail::Access::Read:
        c.read.add(t);
        break;
      case detail::Access::Write:
        c.wrote.add(t);
        break;
      case detail::Access::Atomic:
        c.atomic.add(t);
        break;
    }
  }
}

namespace detail {
void barrier(Block* block, unsigned tid) { block->barrier(tid); }
std::uint64_t warp_exchange(Block* block, unsigned tid, WarpOp op, unsigned mask, std::uint64_t bits,
                            unsigned bytes, std::uint32_t b, std::uint32_t c) {
  return block->warp_exchange(tid, op, mask, bits, bytes, b, c);
}
void mma_exchange(Block* block, unsigned tid, const std::uint32_t* a, const std::uint32_t* b, const float* c,
                  float* d) {
  block->mma_exchange(tid, a, b, c, d);
}
void log_shared(Block* block, unsigned tid, std::size_t byte_offset, std::size_t bytes, Access access) {
  block->log_shared(tid, byte_offset, bytes, access);
}
void fail(Block* block, unsigned tid, const std::string& what) { block->fail(block->who(tid) + ": " + what); }
}  // namespace detail

void launch_impl(Dim3 grid, Dim3 block, std::size_t shared_bytes, const Options& options, const void* fn,
                 BodyFn body) {
  constexpr std::size_t kDefaultMaxDynamicShared = 48 * 1024;
  // CUDA's limits, so a launch that would fail on a device fails here too.
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      threads > 1024) {
    throw KernelError("ot_cuda::emu::launch: block (" + std::to_string(block.x) + "," + std::to_string(block.y) +
                      "," + std::to_string(block.z) + ") breaks CUDA's limits (<= 1024 threads, z <= 64)");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    throw KernelError("ot_cuda::emu::launch: grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) +
                      "," + std::to_string(grid.z) + ") breaks CUDA's limits");
  }
  // Above 48 KiB a device needs cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)
  // first, which no launcher does: refuse here what would fail there.
  if (shared_bytes > kDefaultMaxDynamicShared) {
    throw KernelError("ot_cuda::emu::launch: " + std::to_string(shared_bytes) +
                      " bytes of dynamic shared memory exceed the 48 KiB a launch gets without opting in");
  }
  const Launch launch{grid, block, static_cast<unsigned>(threads), shared_bytes, options, fn, body};
  const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  const auto workers = static_cast<unsigned>(std::clamp<std::uint64_t>(options.workers, 1, blocks));

  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::exception_ptr first_error;
  auto work = [&] {
    try {
      Block runner(launch);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t i = next.fetch_add(1);
        if (i >= blocks) break;
        runner.run(i);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!first_error) first_error = std::current_exception();
      stop = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < workers; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ot_cuda::emu
