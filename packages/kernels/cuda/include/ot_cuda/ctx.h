// The execution context a kernel body is written against.
//
// A body is `template <class Ctx> OT_HD void body(Ctx& ctx, ...)` and only
// talks to the hardware through ctx:
//
//   ctx.thread_idx() / block_idx() / block_dim() / grid_dim()   (Dim3)
//   ctx.linear_tid(), ctx.lane(), ctx.warp()   (warps are formed from the
//                                               linear thread index, as in CUDA)
//   ctx.sync()                                  __syncthreads()
//   ctx.shfl_sync / shfl_up_sync / shfl_down_sync / shfl_xor_sync(mask, v, b, width)
//   ctx.ballot_sync / any_sync / all_sync(mask, pred)
//   ot_cuda::shared_array<T>(ctx, byte_offset)  the block's dynamic shared
//                                               memory, as an indexable array
//   ctx.atomic_add(T* p, T v)                   atomicAdd (float, int, unsigned)
//   ctx.mma_m16n8k16_bf16_f32(d, a, b, c)       mma.sync.aligned.m16n8k16.row.col
//                                               .f32.bf16.bf16.f32 (below)
//
// The warp-level matrix op. D (16x8 f32) = A (16x16 bf16) * B (16x8 bf16) + C
// (16x8 f32), every lane of a full warp taking part, each holding fragments:
//   float d[4], c[4];  std::uint32_t a[4] (8 bf16), b[2] (4 bf16)
// in exactly PTX's layout (PTX ISA, "Warp Level Matrix Multiply-Accumulate
// Instructions" > mma > "Matrix Fragments for mma.m16n8k16 with floating
// point type", .bf16 A/B and .f32 C/D). With g = lane >> 2, t = lane % 4, and
// two bf16 per b32 register (the lower-numbered element in bits 15:0):
//   a[0] = A[g  ][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
//   a[2] = A[g  ][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   b[0] = B[2t, 2t+1][g]       b[1] = B[2t+8, 2t+9][g]      (k down a column)
//   c[0], c[1] = C[g][2t, 2t+1] c[2], c[3] = C[g+8][2t, 2t+1]   (D the same)
// A is row-major ("row": a[r]'s pair runs along a row of A) and B col-major
// ("col": b[r]'s pair runs down a column of B), so for y = x W^T both x's and
// W's rows supply their pairs straight from consecutive k. The emulator adds
// the products (exact in f32) to C in f32 in k order; a tensor core's
// internal rounding differs, within the tolerance of every bf16 test.
//
// Under nvcc (__CUDACC__) this is DeviceCtx below: every call is the intrinsic
// itself, force-inlined, so the body costs what hand-written CUDA costs (the
// compile gate checks the PTX and the registers). Under g++ it is
// ot_cuda::emu::Ctx: the CPU execution of the CUDA model in ../../emu/, which
// runs the very same body with threads as fibers and optional checks.
//
// Rules a body follows so both executions agree (the emulator enforces them
// and throws ot_cuda::emu::KernelError when broken):
//  - every thread of the block reaches every sync() (no early return before a
//    sync() that others still reach);
//  - warp operations are called convergently by every lane of the warp, with
//    mask naming exactly the warp's lanes (kFullMask for a full warp);
//  - shared memory is only reached through shared_array (that is where the
//    emulator bounds-checks it and logs races).
#pragma once

#include "base.h"

#if defined(__CUDACC__)

// The block's dynamic shared memory (the launch's third <<<>>> argument).
extern __shared__ __align__(16) unsigned char ot_cuda_dynamic_smem[];

namespace ot_cuda {

// On the device a shared array is a plain pointer: operator[] is a reference,
// so `s[i] = v` and `v = s[i]` are single ld.shared/st.shared.
template <class T>
class DeviceShared {
 public:
  __device__ OT_FORCEINLINE explicit DeviceShared(T* p) : p_(p) {}
  __device__ OT_FORCEINLINE T& operator[](std::size_t i) const { return p_[i]; }
  __device__ OT_FORCEINLINE T load(std::size_t i) const { return p_[i]; }
  __device__ OT_FORCEINLINE void store(std::size_t i, T v) const { p_[i] = v; }
  __device__ OT_FORCEINLINE T atomic_add(std::size_t i, T v) const { return atomicAdd(p_ + i, v); }
  __device__ OT_FORCEINLINE T* data() const { return p_; }

 private:
  T* p_;
};

struct DeviceCtx {
  __device__ OT_FORCEINLINE Dim3 thread_idx() const { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
  __device__ OT_FORCEINLINE Dim3 block_idx() const { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
  __device__ OT_FORCEINLINE Dim3 block_dim() const { return {blockDim.x, blockDim.y, blockDim.z}; }
  __device__ OT_FORCEINLINE Dim3 grid_dim() const { return {gridDim.x, gridDim.y, gridDim.z}; }
  __device__ OT_FORCEINLINE unsigned linear_tid() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  __device__ OT_FORCEINLINE unsigned lane() const { return linear_tid() % kWarpSize; }
  __device__ OT_FORCEINLINE unsigned warp() const { return linear_tid() / kWarpSize; }

  __device__ OT_FORCEINLINE void sync() { __syncthreads(); }

  template <class T>
  __device__ OT_FORCEINLINE T shfl_sync(unsigned mask, T v, int src_lane, int width = kWarpSize) {
    return __shfl_sync(mask, v, src_lane, width);
  }
  template <class T>
  __device__ OT_FORCEINLINE T shfl_up_sync(unsigned mask, T v, unsigned delta, int width = kWarpSize) {
    return __shfl_up_sync(mask, v, delta, width);
  }
  template <class T>
  __device__ OT_FORCEINLINE T shfl_down_sync(unsigned mask, T v, unsigned delta, int width = kWarpSize) {
    return __shfl_down_sync(mask, v, delta, width);
  }
  template <class T>
  __device__ OT_FORCEINLINE T shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = kWarpSize) {
    return __shfl_xor_sync(mask, v, lane_mask, width);
  }
  __device__ OT_FORCEINLINE unsigned ballot_sync(unsigned mask, bool pred) { return __ballot_sync(mask, pred); }
  __device__ OT_FORCEINLINE bool any_sync(unsigned mask, bool pred) { return __any_sync(mask, pred) != 0; }
  __device__ OT_FORCEINLINE bool all_sync(unsigned mask, bool pred) { return __all_sync(mask, pred) != 0; }

  template <class T>
  __device__ OT_FORCEINLINE DeviceShared<T> shared(std::size_t byte_offset = 0) const {
    return DeviceShared<T>(reinterpret_cast<T*>(ot_cuda_dynamic_smem + byte_offset));
  }

  template <class T>
  __device__ OT_FORCEINLINE T atomic_add(T* p, T v) const {
    return atomicAdd(p, v);
  }

  // sm_80+: the mma.sync the emulator models (layout in the comment above).
  __device__ OT_FORCEINLINE void mma_m16n8k16_bf16_f32(float (&d)[4], const std::uint32_t (&a)[4],
                                                       const std::uint32_t (&b)[2], const float (&c)[4]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
};

}  // namespace ot_cuda

#else

#include "../../emu/emu.h"

#endif
