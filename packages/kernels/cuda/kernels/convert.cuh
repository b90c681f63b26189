// f32 <-> bf16 conversions, written once (device target convert.cu, tests
// test/test_convert.cpp):
//
//   f32_to_bf16   y[i] = bf16 bits of x[i], rounded to nearest even; a NaN
//                 stays a NaN: its top 16 bits with the quiet bit set (sign
//                 and top payload kept)
//   bf16_to_f32   y[i] = the float whose top 16 bits are x[i] (exact)
//
// bf16 is held as uint16 bits. The rounding is the engine's
// floatBitsToBfloat16 (../../engine/src/model/float-convert.ts) and, for every
// non-NaN, test/bf16.h's to_bf16, bit for bit: integer arithmetic on the
// float's bits, not cvt.rn.bf16.f32 (which gives every NaN as 0x7fff).
// Widening is ../src/cpu/gemm_bf16.cc's bf16_to_f32. Infinities, signed zeros
// and subnormals go through the same arithmetic (no flush to zero); a finite
// value that rounds past the largest bf16 becomes an infinity.
//
// Elementwise over a 64-bit count, grid-stride (elementwise_shape.cuh's 256
// threads), four elements a step: one 16-byte f32 pack and one 8-byte bf16
// pack (ld.global.v4.f32 / st.global.v2.u32 one way, ld.global.v2.u32 /
// st.global.v4.u32 the other) when both pointers are so aligned, then
// the < 4 leftover elements (or, unaligned, all of them) one by one.
#pragma once

#include <cstring>

#include "elementwise_shape.cuh"

namespace ot_cuda::kernels {

// Blocks for `count` elements: one 4-element step per thread, capped (the
// grid-stride loop covers the rest).
OT_HD constexpr unsigned convert_blocks(std::int64_t count) { return elementwise_blocks((count + 3) / 4); }

// ---- one element ----------------------------------------------------------

OT_HD OT_FORCEINLINE std::uint32_t convert_f32_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}

OT_HD OT_FORCEINLINE float convert_f32_from_bits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}

// Round to nearest even on the bits: adding 0x7fff plus the kept part's low
// bit carries into bit 16 exactly when the dropped half is above 0x8000, or
// equal to it with an odd kept part; a carry out of the mantissa moves to the
// next binade, up to infinity. No NaN reaches the addition, and no non-NaN
// overflows 32 bits (0xff800000 + 0x8000 < 2^32).
OT_HD OT_FORCEINLINE std::uint16_t bf16_from_f32_rne(float v) {
  const std::uint32_t u = convert_f32_bits(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

OT_HD OT_FORCEINLINE float f32_from_bf16(std::uint16_t h) { return convert_f32_from_bits(std::uint32_t{h} << 16); }

// ---- packs ----------------------------------------------------------------

// Four f32 (16 bytes) and four bf16 (8 bytes: elements 2l and 2l + 1 in the
// low and high half of v[l], as little-endian memory holds them).
struct alignas(16) ConvertF32x4 {
  float v[4];
};
struct alignas(8) ConvertBf16x4 {
  std::uint32_t v[2];
};

// One vector access on the device; memcpy on the host, where reading through
// a struct lvalue would break strict aliasing.
template <class Pack, class T>
OT_HD OT_FORCEINLINE Pack convert_load(const T* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Pack*>(p);
#else
  Pack r;
  std::memcpy(&r, p, sizeof r);
  return r;
#endif
}
template <class Pack, class T>
OT_HD OT_FORCEINLINE void convert_store(T* p, const Pack& v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Pack*>(p) = v;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

OT_HD OT_FORCEINLINE bool convert_aligned(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// ---- the ops --------------------------------------------------------------

template <class Ctx>
OT_HD void convert_f32_to_bf16(Ctx& ctx, const float* x, std::uint16_t* y, std::int64_t count) {
  const std::int64_t first = grid_index(ctx), stride = grid_stride(ctx);
  std::int64_t done = 0;
  if (convert_aligned(x, 16) && convert_aligned(y, 8)) {
    const std::int64_t packs = count / 4;
    for (std::int64_t p = first; p < packs; p += stride) {
      const ConvertF32x4 a = convert_load<ConvertF32x4>(x + p * 4);
      ConvertBf16x4 b;
      b.v[0] = std::uint32_t{bf16_from_f32_rne(a.v[0])} | (std::uint32_t{bf16_from_f32_rne(a.v[1])} << 16);
      b.v[1] = std::uint32_t{bf16_from_f32_rne(a.v[2])} | (std::uint32_t{bf16_from_f32_rne(a.v[3])} << 16);
      convert_store(y + p * 4, b);
    }
    done = packs * 4;
  }
  for (std::int64_t i = done + first; i < count; i += stride) y[i] = bf16_from_f32_rne(x[i]);
}

template <class Ctx>
OT_HD void convert_bf16_to_f32(Ctx& ctx, const std::uint16_t* x, float* y, std::int64_t count) {
  const std::int64_t first = grid_index(ctx), stride = grid_stride(ctx);
  std::int64_t done = 0;
  if (convert_aligned(x, 8) && convert_aligned(y, 16)) {
    const std::int64_t packs = count / 4;
    for (std::int64_t p = first; p < packs; p += stride) {
      const ConvertBf16x4 a = convert_load<ConvertBf16x4>(x + p * 4);
      ConvertF32x4 b;
      b.v[0] = convert_f32_from_bits(a.v[0] << 16);
      b.v[1] = convert_f32_from_bits(a.v[0] & 0xffff0000u);
      b.v[2] = convert_f32_from_bits(a.v[1] << 16);
      b.v[3] = convert_f32_from_bits(a.v[1] & 0xffff0000u);
      convert_store(y + p * 4, b);
    }
    done = packs * 4;
  }
  for (std::int64_t i = done + first; i < count; i += stride) y[i] = f32_from_bf16(x[i]);
}

// x as two bf16s whose sum is x to about 2^-17 relative: hi = bf16(x), lo =
// bf16(x − hi) (x − hi is exact in f32). Two tensor-core products, hi·W and
// lo·W, then carry f32 activations against a bf16 weight to nearly f32
// accuracy (the CPU widens W and keeps x in f32). Non-finite x: lo = 0.
template <class Ctx>
OT_HD void convert_f32_to_bf16_split(Ctx& ctx, const float* x, std::uint16_t* hi, std::uint16_t* lo,
                                     std::int64_t count) {
  for (std::int64_t i = grid_index(ctx), stride = grid_stride(ctx); i < count; i += stride) {
    const float v = x[i];
    const std::uint16_t h = bf16_from_f32_rne(v);
    const float rest = v - f32_from_bf16(h);
    hi[i] = h;
    lo[i] = rest == rest && rest - rest == 0.0f ? bf16_from_f32_rne(rest) : std::uint16_t{0};
  }
}

}  // namespace ot_cuda::kernels
