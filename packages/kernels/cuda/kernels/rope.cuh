// Rotary position embedding, written once (device target rope.cu, tests
// test/test_rope.cpp), in the convention of ../../src/cpu/rope.cc (Hugging
// Face rotate_half): x is [n, heads, head_dim], rotated in place; in every
// head element k pairs with k + rot_half (k < rot_half ≤ head_dim / 2), and
//
//   θ = positions[i] · inv_freq[k]        (float64, as the CPU kernel)
//   c = float(scale · cos θ),  s = float(±scale · sin θ)
//   a' = a·c − b·s,  b' = b·c + a·s
//
// Dimensions from 2·rot_half on pass through (partial rotary). `inverse`
// turns by −θ: the transpose of the forward map, i.e. its backward (dx from
// dy, in place).
//
// One block per token row i (grid.x = n). The block first computes the row's
// cos/sin once into shared memory ([2, rot_half] floats, rope_shared_bytes),
// syncs, then every head's pairs are rotated from it.
#pragma once

#include "../include/ot_cuda/ctx.h"

namespace ot_cuda::kernels {

// Whole warps covering heads · rot_half pairs, at most 256 threads.
OT_HD constexpr int rope_block_threads(int heads, int rot_half) {
  const int pairs = heads * rot_half;
  const int warps = (pairs + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
OT_HD constexpr std::size_t rope_shared_bytes(int rot_half) { return 2 * static_cast<std::size_t>(rot_half) * sizeof(float); }

template <class Ctx>
OT_HD void rope_f32(Ctx& ctx, float* x, const std::int32_t* positions, const float* inv_freq, int heads, int head_dim,
                    int rot_half, float scale, bool inverse) {
  const std::int64_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.linear_tid());
  const Dim3 bd = ctx.block_dim();
  const int stride = static_cast<int>(bd.x * bd.y * bd.z);
  const auto table = shared_array<float>(ctx);  // cos at [0, rot_half), sin at [rot_half, 2·rot_half)

  const double position = static_cast<double>(positions[row]);
  const double sign = inverse ? -1.0 : 1.0;
  for (int k = tid; k < rot_half; k += stride) {
    const double angle = position * static_cast<double>(inv_freq[k]);
    double sin_a, cos_a;
#if defined(__CUDA_ARCH__)
    ::sincos(angle, &sin_a, &cos_a);
#else
    sin_a = std::sin(angle);
    cos_a = std::cos(angle);
#endif
    table[k] = static_cast<float>(scale * cos_a);
    table[rot_half + k] = static_cast<float>(sign * scale * sin_a);
  }
  ctx.sync();

  float* xr = x + row * heads * head_dim;
  for (int j = tid; j < heads * rot_half; j += stride) {
    const int h = j / rot_half, k = j - h * rot_half;
    float* a = xr + static_cast<std::int64_t>(h) * head_dim + k;
    const float c = table[k], s = table[rot_half + k];
    const float ak = a[0], bk = a[rot_half];
    a[0] = ak * c - bk * s;
    a[rot_half] = bk * c + ak * s;
  }
}

}  // namespace ot_cuda::kernels
