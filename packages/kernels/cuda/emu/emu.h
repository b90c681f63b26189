// The CPU execution of the CUDA model: what a kernel body's `ctx` is under g++.
//
// ot_cuda::emu::launch(grid, block, shared_bytes, options, [&](auto& ctx) {
//   body(ctx, ...); });
// runs the body for every thread of every block, like <<<grid, block,
// shared_bytes>>>. Blocks run one after another (or on `workers` OS threads);
// the threads of a block run as fibers on one OS thread, switching only at
// sync() and at warp operations, which is what lets a barrier, a shuffle or a
// vote behave exactly as on a GPU without any OS-level concurrency inside a
// block. Three checking modes (Options) make bugs that a GPU would hide, or
// show only sometimes, fail every time:
//   random_order: the order in which threads run between two barriers is a
//     seeded shuffle instead of thread order (a body must not depend on it);
//   nan_fill: shared memory is filled with 0xff bytes (NaN as f32/f64/bf16,
//     -1 as an integer) before each block, so a read of a slot nobody wrote
//     poisons the result instead of reading a convenient 0;
//   race_check: every shared-memory access between two sync() is logged, and
//     two threads touching the same byte, at least one of them writing
//     (atomics only conflict with plain accesses), is a KernelError.
// Misuse of the model that CUDA leaves undefined (divergent sync() or warp
// operations, masks that are not the whole warp, shfl widths that are not a
// power of two, reading a lane that does not exist, shared memory out of
// bounds) is always a KernelError naming the block and the thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../include/ot_cuda/base.h"

namespace ot_cuda::emu {

// A kernel broke a rule of the CUDA model, or a check caught it (a race, ...).
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  bool random_order = false;  // (a) seeded random thread order between barriers
  std::uint64_t seed = 1;     // the shuffle's seed (mixed with the block index)
  bool nan_fill = false;      // (b) shared memory = 0xff bytes before each block (else zeros)
  bool race_check = false;    // (c) log shared-memory accesses per barrier interval
  unsigned workers = 1;       // OS threads running blocks (blocks are independent)
  std::size_t stack_bytes = 64 * 1024;  // per fiber, plus a guard page
};

// The modes an op's test runs in: plain, each check alone, and all at once.
struct Mode {
  std::string name;
  Options options;
};
std::vector<Mode> checking_modes(std::uint64_t seed = 1);

class Block;  // one worker's block runner (emu.cpp)

namespace detail {
enum class Access : std::uint8_t { Read, Write, Atomic };
enum class WarpOp : std::uint8_t { ShflIdx, ShflUp, ShflDown, ShflBfly, Ballot, Any, All, Mma };

void barrier(Block* block, unsigned tid);
// Every lane of the warp deposits (bits, b, c, mask); once the last lane has
// arrived each gets its result (a warp-scoped barrier). b and c are PTX's
// shfl.sync operands.
std::uint64_t warp_exchange(Block* block, unsigned tid, WarpOp op, unsigned mask, std::uint64_t bits,
                            unsigned bytes, std::uint32_t b, std::uint32_t c);
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 as a warp exchange:
// every lane deposits its A (4 x b32), B (2 x b32) and C (4 x f32) fragment
// registers; once all 32 lanes have arrived the warp's 16x16 A, 16x8 B and
// 16x8 C are gathered with PTX's fragment layout, D = A*B + C is computed, and
// each lane gets its 4 D registers back (see Ctx::mma_m16n8k16_bf16_f32).
void mma_exchange(Block* block, unsigned tid, const std::uint32_t* a, const std::uint32_t* b, const float* c,
                  float* d);
void log_shared(Block* block, unsigned tid, std::size_t byte_offset, std::size_t bytes, Access access);
[[noreturn]] void fail(Block* block, unsigned tid, const std::string& what);

template <class T>
std::uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp operations move at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}
template <class T>
T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
}  // namespace detail

template <class T>
class Shared;

// What Shared<T>::operator[] returns: reading it is a logged load, assigning
// it a logged store, so `s[i] = v`, `v = s[i]` and `s[i] += v` read like CUDA.
template <class T>
class SharedRef {
 public:
  SharedRef(const Shared<T>& s, std::size_t i) : s_(s), i_(i) {}
  operator T() const { return s_.load(i_); }  // implicit, as a T& would be
  SharedRef& operator=(T v) {
    s_.store(i_, v);
    return *this;
  }
  SharedRef& operator=(const SharedRef& other) { return *this = static_cast<T>(other); }
  SharedRef& operator+=(T v) { return *this = static_cast<T>(*this) + v; }
  SharedRef& operator-=(T v) { return *this = static_cast<T>(*this) - v; }
  SharedRef& operator*=(T v) { return *this = static_cast<T>(*this) * v; }

 private:
  Shared<T> s_;  // a copy: a SharedRef outliving the array expression stays valid
  std::size_t i_;
};

// The block's dynamic shared memory seen as T[size()]: every access is
// bounds-checked and, in race_check mode, logged. data() is the unchecked
// escape hatch (its accesses are invisible to the race log).
template <class T>
class Shared {
 public:
  Shared(T* base, std::size_t count, std::size_t byte_offset, Block* block, unsigned tid, bool log)
      : base_(base), count_(count), byte_offset_(byte_offset), block_(block), tid_(tid), log_(log) {}
  SharedRef<T> operator[](std::size_t i) const { return SharedRef<T>(*this, i); }
  T load(std::size_t i) const {
    check(i, detail::Access::Read);
    return base_[i];
  }
  void store(std::size_t i, T v) const {
    check(i, detail::Access::Write);
    base_[i] = v;
  }
  T atomic_add(std::size_t i, T v) const {
    check(i, detail::Access::Atomic);
    return std::atomic_ref<T>(base_[i]).fetch_add(v, std::memory_order_relaxed);
  }
  std::size_t size() const { return count_; }
  T* data() const { return base_; }

 private:
  void check(std::size_t i, detail::Access access) const {
    if (i >= count_) {
      detail::fail(block_, tid_,
                   "shared-memory index " + std::to_string(i) + " is out of bounds (" + std::to_string(count_) +
                       " elements of " + std::to_string(sizeof(T)) + " bytes at byte offset " +
                       std::to_string(byte_offset_) + ")");
    }
    if (log_) detail::log_shared(block_, tid_, byte_offset_ + i * sizeof(T), sizeof(T), access);
  }
  T* base_;
  std::size_t count_, byte_offset_;
  Block* block_;
  unsigned tid_;
  bool log_;
};

// One thread's context. The launch builds one per fiber; a body only uses it
// through the interface documented in ot_cuda/ctx.h.
class Ctx {
 public:
  Dim3 thread_idx() const { return thread_idx_; }
  Dim3 block_idx() const { return block_idx_; }
  Dim3 block_dim() const { return block_dim_; }
  Dim3 grid_dim() const { return grid_dim_; }
  unsigned linear_tid() const { return tid_; }
  unsigned lane() const { return tid_ % kWarpSize; }
  unsigned warp() const { return tid_ / kWarpSize; }

  void sync() { detail::barrier(block_, tid_); }

  template <class T>
  T shfl_sync(unsigned mask, T v, int src_lane, int width = kWarpSize) {
    return shfl(detail::WarpOp::ShflIdx, mask, v, static_cast<std::uint32_t>(src_lane), width);
  }
  template <class T>
  T shfl_up_sync(unsigned mask, T v, unsigned delta, int width = kWarpSize) {
    return shfl(detail::WarpOp::ShflUp, mask, v, delta, width);
  }
  template <class T>
  T shfl_down_sync(unsigned mask, T v, unsigned delta, int width = kWarpSize) {
    return shfl(detail::WarpOp::ShflDown, mask, v, delta, width);
  }
  template <class T>
  T shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = kWarpSize) {
    return shfl(detail::WarpOp::ShflBfly, mask, v, static_cast<std::uint32_t>(lane_mask), width);
  }
  unsigned ballot_sync(unsigned mask, bool pred) {
    return static_cast<unsigned>(detail::warp_exchange(block_, tid_, detail::WarpOp::Ballot, mask, pred, 1, 0, 0));
  }
  bool any_sync(unsigned mask, bool pred) {
    return detail::warp_exchange(block_, tid_, detail::WarpOp::Any, mask, pred, 1, 0, 0) != 0;
  }
  bool all_sync(unsigned mask, bool pred) {
    return detail::warp_exchange(block_, tid_, detail::WarpOp::All, mask, pred, 1, 0, 0) != 0;
  }

  // mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d}, {a}, {b}, {c}:
  // D (16x8 f32) = A (16x16 bf16, row) * B (16x8 bf16, col) + C (16x8 f32),
  // a warp-wide operation every lane of a full warp must reach. The fragment
  // layout is PTX's (ot_cuda/ctx.h documents it); in the emulator the
  // products (exact in f32) are added to C in f32 in k order 0..15.
  void mma_m16n8k16_bf16_f32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                             const float (&c)[4]) {
    detail::mma_exchange(block_, tid_, a, b, c, d);
  }

  template <class T>
  Shared<T> shared(std::size_t byte_offset = 0) const {
    if (byte_offset % alignof(T) != 0 || byte_offset > smem_bytes_) {
      detail::fail(block_, tid_,
                   "shared<T>(" + std::to_string(byte_offset) + "): the offset is misaligned or past the " +
                       std::to_string(smem_bytes_) + " bytes of dynamic shared memory");
    }
    return Shared<T>(reinterpret_cast<T*>(smem_ + byte_offset), (smem_bytes_ - byte_offset) / sizeof(T),
                     byte_offset, block_, tid_, race_check_);
  }

  // atomicAdd on global memory: a real atomic, since with workers > 1 blocks
  // run concurrently on several OS threads.
  template <class T>
  T atomic_add(T* p, T v) const {
    static_assert(std::is_arithmetic_v<T>, "atomic_add takes float, int or unsigned");
    return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
  }

 private:
  template <class T>
  T shfl(detail::WarpOp op, unsigned mask, T v, std::uint32_t b, int width) {
    if (width < 1 || width > kWarpSize || (width & (width - 1)) != 0) {
      detail::fail(block_, tid_, "shfl width " + std::to_string(width) + " is not a power of two in [1, 32]");
    }
    // PTX's c operand exactly as CUDA's __shfl_*_sync builds it: the segment
    // mask (32 - width) in bits 12:8, the clamp lane in bits 4:0 (0 for .up,
    // 31 otherwise). The exchange then follows PTX's pseudo-code.
    const std::uint32_t c = (static_cast<std::uint32_t>(kWarpSize - width) << 8) |
                            (op == detail::WarpOp::ShflUp ? 0u : 0x1fu);
    return detail::from_bits<T>(
        detail::warp_exchange(block_, tid_, op, mask, detail::to_bits(v), sizeof(T), b, c));
  }

  friend class Block;
  Block* block_ = nullptr;
  unsigned tid_ = 0;
  Dim3 thread_idx_, block_idx_, block_dim_, grid_dim_;
  unsigned char* smem_ = nullptr;
  std::size_t smem_bytes_ = 0;
  bool race_check_ = false;
};

using BodyFn = void (*)(const void* fn, Ctx& ctx);
void launch_impl(Dim3 grid, Dim3 block, std::size_t shared_bytes, const Options& options, const void* fn,
                 BodyFn body);

// <<<grid, block, shared_bytes>>> on the CPU. f(ctx) is called once per
// thread (concurrently from several OS threads when options.workers > 1).
// Throws KernelError for a broken rule or a failed check.
template <class F>
void launch(Dim3 grid, Dim3 block, std::size_t shared_bytes, const Options& options, const F& f) {
  launch_impl(grid, block, shared_bytes, options, &f,
              [](const void* p, Ctx& ctx) { (*static_cast<const F*>(p))(ctx); });
}

}  // namespace ot_cuda::emu
