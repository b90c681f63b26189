// The Backend's small row and elementwise ops, written once (device target
// rows.cu, tests test/test_rows.cpp), with the semantics of the CPU backend
// (../../src/cpu/add.cc, ../src/backend/cpu.ts and cpu-loops.ts):
//
//   add_in_place    target[i] += source[i]                      (f32 add)
//   scale           x[i] = f32(f64(x[i]) · factor)              (cpu.ts multiplies by a JS number)
//   fill            x[i] = value                                (f32, i32, f64)
//   add_bias        y[r, :] += bias
//   gather_rows     out[i, :] = source[rows[i], :]
//   scatter_rows    target[rows[i], :] = source[i, :]           (rows[] distinct)
//   copy_kv_blocks  for copy c, the first tokens[c] slots (of `row` floats) of
//                   block from[c] into block to[c], in the key and the value cache
//   sum_rows        out[o] = f32(out[o] + Σ_r dy[r, o])        (the sum in f64)
//
// Shapes. The elementwise ops (add_in_place, scale, fill) are 1-D grid-stride
// loops (elementwise_shape.cuh) over 64-bit counts. add_bias, gather_rows and
// scatter_rows give each block a row (grid-stride over rows, grid.x ≤ 65535),
// its threads striding over the d columns. copy_kv_blocks puts copy c on
// grid.y (grid-stride over copies), its span on grid.x × the block. sum_rows
// gives each block a tile of 32 columns: 8 warps, warp s summing rows s, s + 8,
// … of its columns (each row read is one coalesced 128-byte line), then warp 0
// adds the 8 partials in a fixed order — deterministic, no float atomics.
//
// Every span is moved in 16-byte packs (ld/st.global.v4.f32, .v2.f64) when all
// its pointers are 16-byte aligned, with a scalar tail; otherwise (a view at an
// odd element offset, rows of d % 4 ≠ 0) element by element. Indices (rows[],
// from/to/tokens) are trusted in range (the binding checks them).
#pragma once

#include <cstring>

#include "elementwise_shape.cuh"

namespace ot_cuda::kernels {

// ---- launch shapes -------------------------------------------------------

// The elementwise ops: one 16-byte pack per thread per iteration.
template <class T>
OT_HD constexpr unsigned pack_blocks(std::int64_t count) {
  return elementwise_blocks((count * static_cast<std::int64_t>(sizeof(T)) + 15) / 16);
}

// A block per row: whole warps covering the row's packs once, 1 to 8 warps.
OT_HD constexpr int row_block_threads(int d) {
  const int warps = (d / 4 + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
OT_HD constexpr unsigned row_blocks(int rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : rows > 65535 ? 65535 : rows);
}

// copy_kv_blocks: 256 threads; enough blocks along x to cover a whole block's
// span (block_size · row floats) in one pass of packs, at most 64; a copy per
// grid.y, at most 65535 (then grid-stride).
OT_HD constexpr unsigned copy_kv_chunks(int block_size, int row) {
  const std::int64_t per_pass = static_cast<std::int64_t>(kElementwiseThreads) * 4;
  const std::int64_t c = (static_cast<std::int64_t>(block_size) * row + per_pass - 1) / per_pass;
  return static_cast<unsigned>(c < 1 ? 1 : c > 64 ? 64 : c);
}
OT_HD constexpr unsigned copy_kv_grid_y(int num_copies) { return row_blocks(num_copies); }

// sum_rows: 32 columns × 8 row slices; one double of scratch per thread.
inline constexpr int kSumRowsColumns = kWarpSize;
inline constexpr int kSumRowsSlices = 8;
inline constexpr int kSumRowsThreads = kSumRowsColumns * kSumRowsSlices;
OT_HD constexpr unsigned sum_rows_blocks(int d) {
  const int b = (d + kSumRowsColumns - 1) / kSumRowsColumns;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}
OT_HD constexpr std::size_t sum_rows_shared_bytes() {
  return static_cast<std::size_t>(kSumRowsThreads) * sizeof(double);
}

// ---- 16-byte packs -------------------------------------------------------

template <class T>
struct alignas(16) Pack16 {
  static constexpr int kLanes = 16 / static_cast<int>(sizeof(T));
  T v[kLanes];
};

// One vector load / store on the device; memcpy on the host, where reading
// floats through a struct lvalue would break strict aliasing.
template <class T>
OT_HD OT_FORCEINLINE Pack16<T> load_pack(const T* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Pack16<T>*>(p);
#else
  Pack16<T> r;
  std::memcpy(&r, p, sizeof r);
  return r;
#endif
}
template <class T>
OT_HD OT_FORCEINLINE void store_pack(T* p, const Pack16<T>& v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Pack16<T>*>(p) = v;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

OT_HD OT_FORCEINLINE bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The span helpers: elements [0, n) shared by threads first, first + stride,
// … — packs first when aligned, then the < 4 leftover elements (or all of
// them, unaligned) one by one.

OT_HD OT_FORCEINLINE void copy_span(float* dst, const float* src, std::int64_t n, std::int64_t first,
                                    std::int64_t stride) {
  std::int64_t done = 0;
  if (aligned16(dst) && aligned16(src)) {
    constexpr int L = Pack16<float>::kLanes;
    const std::int64_t packs = n / L;
    for (std::int64_t p = first; p < packs; p += stride) store_pack(dst + p * L, load_pack(src + p * L));
    done = packs * L;
  }
  for (std::int64_t i = done + first; i < n; i += stride) dst[i] = src[i];
}

OT_HD OT_FORCEINLINE void add_span(float* dst, const float* src, std::int64_t n, std::int64_t first,
                                   std::int64_t stride) {
  std::int64_t done = 0;
  if (aligned16(dst) && aligned16(src)) {
    constexpr int L = Pack16<float>::kLanes;
    const std::int64_t packs = n / L;
    for (std::int64_t p = first; p < packs; p += stride) {
      Pack16<float> a = load_pack(dst + p * L);
      const Pack16<float> b = load_pack(src + p * L);
      for (int l = 0; l < L; ++l) a.v[l] += b.v[l];
      store_pack(dst + p * L, a);
    }
    done = packs * L;
  }
  for (std::int64_t i = done + first; i < n; i += stride) dst[i] += src[i];
}

// ---- elementwise ---------------------------------------------------------

template <class Ctx>
OT_HD void add_in_place_f32(Ctx& ctx, float* target, const float* source, std::int64_t count) {
  add_span(target, source, count, grid_index(ctx), grid_stride(ctx));
}

// The product in f64, rounded once: what Float32Array's x * factor stores.
template <class Ctx>
OT_HD void scale_f32(Ctx& ctx, float* x, std::int64_t count, double factor) {
  const std::int64_t first = grid_index(ctx), stride = grid_stride(ctx);
  std::int64_t done = 0;
  if (aligned16(x)) {
    constexpr int L = Pack16<float>::kLanes;
    const std::int64_t packs = count / L;
    for (std::int64_t p = first; p < packs; p += stride) {
      Pack16<float> a = load_pack(x + p * L);
      for (int l = 0; l < L; ++l) a.v[l] = static_cast<float>(static_cast<double>(a.v[l]) * factor);
      store_pack(x + p * L, a);
    }
    done = packs * L;
  }
  for (std::int64_t i = done + first; i < count; i += stride) {
    x[i] = static_cast<float>(static_cast<double>(x[i]) * factor);
  }
}

template <class Ctx, class T>
OT_HD void fill(Ctx& ctx, T* x, std::int64_t count, T value) {
  const std::int64_t first = grid_index(ctx), stride = grid_stride(ctx);
  std::int64_t done = 0;
  if (aligned16(x)) {
    constexpr int L = Pack16<T>::kLanes;
    Pack16<T> v;
    for (int l = 0; l < L; ++l) v.v[l] = value;
    const std::int64_t packs = count / L;
    for (std::int64_t p = first; p < packs; p += stride) store_pack(x + p * L, v);
    done = packs * L;
  }
  for (std::int64_t i = done + first; i < count; i += stride) x[i] = value;
}

// ---- rows ----------------------------------------------------------------

template <class Ctx>
OT_HD void add_bias_f32(Ctx& ctx, float* y, const float* bias, int rows, int d) {
  const std::int64_t tid = ctx.thread_idx().x, threads = ctx.block_dim().x;
  for (std::int64_t r = ctx.block_idx().x; r < rows; r += ctx.grid_dim().x) add_span(y + r * d, bias, d, tid, threads);
}

template <class Ctx>
OT_HD void gather_rows_f32(Ctx& ctx, const float* source, const std::int32_t* rows, int n, int d, float* out) {
  const std::int64_t tid = ctx.thread_idx().x, threads = ctx.block_dim().x;
  for (std::int64_t i = ctx.block_idx().x; i < n; i += ctx.grid_dim().x) {
    copy_span(out + i * d, source + static_cast<std::int64_t>(rows[i]) * d, d, tid, threads);
  }
}

// Rows must be distinct: two sources for one target row land in either order.
template <class Ctx>
OT_HD void scatter_rows_f32(Ctx& ctx, float* target, const std::int32_t* rows, int n, int d, const float* source) {
  const std::int64_t tid = ctx.thread_idx().x, threads = ctx.block_dim().x;
  for (std::int64_t i = ctx.block_idx().x; i < n; i += ctx.grid_dim().x) {
    copy_span(target + static_cast<std::int64_t>(rows[i]) * d, source + i * d, d, tid, threads);
  }
}

// Copies run in parallel: no copy's destination may be another's source (the
// copy-on-write blocks it serves are fresh), so the CPU's sequential order
// gives the same result. from == to is a harmless self-copy.
template <class Ctx>
OT_HD void copy_kv_blocks_f32(Ctx& ctx, float* key_cache, float* value_cache, int block_size, int row,
                              const std::int32_t* from, const std::int32_t* to, const std::int32_t* tokens,
                              int num_copies) {
  const std::int64_t first = static_cast<std::int64_t>(ctx.block_idx().x) * ctx.block_dim().x + ctx.thread_idx().x;
  const std::int64_t stride = static_cast<std::int64_t>(ctx.grid_dim().x) * ctx.block_dim().x;
  const std::int64_t block_floats = static_cast<std::int64_t>(block_size) * row;
  for (std::int64_t c = ctx.block_idx().y; c < num_copies; c += ctx.grid_dim().y) {
    const std::int64_t src = from[c] * block_floats, dst = to[c] * block_floats;
    const std::int64_t n = static_cast<std::int64_t>(tokens[c]) * row;
    copy_span(key_cache + dst, key_cache + src, n, first, stride);
    copy_span(value_cache + dst, value_cache + src, n, first, stride);
  }
}

// Launched with kSumRowsThreads threads and sum_rows_shared_bytes().
template <class Ctx>
OT_HD void sum_rows_f32(Ctx& ctx, const float* dy, int rows, int d, float* out) {
  const int lane = static_cast<int>(ctx.lane()), slice = static_cast<int>(ctx.warp());
  const std::int64_t col = static_cast<std::int64_t>(ctx.block_idx().x) * kSumRowsColumns + lane;
  double sum = 0.0;  // f64: a long column of f32 terms keeps its accuracy
  if (col < d) {
    for (std::int64_t r = slice; r < rows; r += kSumRowsSlices) sum += static_cast<double>(dy[r * d + col]);
  }
  const auto scratch = shared_array<double>(ctx);
  scratch[static_cast<std::size_t>(slice) * kSumRowsColumns + lane] = sum;
  ctx.sync();
  if (slice == 0 && col < d) {
    double total = 0.0;
    for (int s = 0; s < kSumRowsSlices; ++s) {
      total += static_cast<double>(scratch[static_cast<std::size_t>(s) * kSumRowsColumns + lane]);
    }
    out[col] = static_cast<float>(static_cast<double>(out[col]) + total);
  }
}

}  // namespace ot_cuda::kernels
