// Dense f32 GEMM on CUDA cores, written once: nvcc compiles it in gemm_f32.cu,
// the tests run it in the CPU execution (test/test_gemm_f32.cpp).
//
//   y[r, c] (+)= sum_k x[r, k] * W[c, k]      (y = x W^T: our `linear`, f32)
//
// x is m x k, W is n x k, y is m x n, all row-major f32; accumulate adds to y
// instead of overwriting it. Any m, n, k >= 1 (edges guarded; k == 0 writes
// zeros, or leaves y as it is when accumulating).
//
// A block of 256 threads computes a 64 x 64 tile of y (grid = gemm_f32_grid:
// x over column tiles, y over row tiles); thread (tx = tid % 16, ty = tid /
// 16) owns rows ty * 4 + i and columns tx + 16 j (i, j < 4): 16 f32
// accumulators, fma in k order. The k loop steps 16 at a time: the block
// stages x[64 rows, 16 k] and W[64 rows, 16 k] in shared memory k-major
// (s[kk][row], rows padded to 65 words), sync(), every thread runs 16 steps of
// 4 x 4 fma, sync() before the next stage overwrites the tile.
#pragma once

#include "../include/ot_cuda/ctx.h"

#if defined(__CUDA_ARCH__)
#define OT_GEMM_F32_UNROLL _Pragma("unroll")
#else
#define OT_GEMM_F32_UNROLL
#endif

namespace ot_cuda::kernels {

inline constexpr int kGemmF32TileM = 64, kGemmF32TileN = 64, kGemmF32TileK = 16;
inline constexpr int kGemmF32Threads = 256;
// A staged k slice is 64 rows padded to 65 words: the staging stores
// (consecutive threads, consecutive kk) conflict at most 2 ways, not 16.
inline constexpr int kGemmF32RowWords = kGemmF32TileM + 1;

OT_HD constexpr int gemm_f32_block_threads() { return kGemmF32Threads; }
OT_HD constexpr std::size_t gemm_f32_shared_bytes() {
  return static_cast<std::size_t>(2 * kGemmF32TileK) * kGemmF32RowWords * sizeof(float);
}
// Column tiles on x, row tiles on y (at most 65535, so m <= 4194240).
OT_HD constexpr Dim3 gemm_f32_grid(int m, int n) {
  return Dim3{static_cast<unsigned>((n + kGemmF32TileN - 1) / kGemmF32TileN),
              static_cast<unsigned>((m + kGemmF32TileM - 1) / kGemmF32TileM), 1};
}

template <class Ctx>
OT_HD void gemm_f32_xwt(Ctx& ctx, const float* x, const float* w, float* y, int m, int n, int k, bool accumulate) {
  const auto sx = shared_array<float>(ctx, 0);
  const auto sw = shared_array<float>(ctx, kGemmF32TileK * kGemmF32RowWords * sizeof(float));
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = static_cast<int>(ctx.block_idx().y) * kGemmF32TileM;
  const int n0 = static_cast<int>(ctx.block_idx().x) * kGemmF32TileN;

  float acc[4][4];
  OT_GEMM_F32_UNROLL
  for (int i = 0; i < 4; ++i) {
    OT_GEMM_F32_UNROLL
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }

  constexpr int kStage = kGemmF32TileM * kGemmF32TileK;
  static_assert(kGemmF32TileM == kGemmF32TileN && kStage % kGemmF32Threads == 0,
                "the staging loop gives every thread the same number of elements of x and of W");
  for (int k0 = 0; k0 < k; k0 += kGemmF32TileK) {
    // Stage: consecutive threads take consecutive k of a row (coalesced),
    // stored k-major; zero past the edges.
    OT_GEMM_F32_UNROLL
    for (int s = 0; s < kStage / kGemmF32Threads; ++s) {
      const int i = tid + s * kGemmF32Threads;
      const int r = i / kGemmF32TileK, kk = i % kGemmF32TileK;
      const bool in_k = k0 + kk < k;
      const std::size_t col = static_cast<std::size_t>(k0 + kk);
      sx[kk * kGemmF32RowWords + r] =
          in_k && m0 + r < m ? x[static_cast<std::size_t>(m0 + r) * static_cast<std::size_t>(k) + col] : 0.0f;
      sw[kk * kGemmF32RowWords + r] =
          in_k && n0 + r < n ? w[static_cast<std::size_t>(n0 + r) * static_cast<std::size_t>(k) + col] : 0.0f;
    }
    ctx.sync();

    OT_GEMM_F32_UNROLL
    for (int kk = 0; kk < kGemmF32TileK; ++kk) {
      float a[4], b[4];
      OT_GEMM_F32_UNROLL
      for (int i = 0; i < 4; ++i) a[i] = sx[kk * kGemmF32RowWords + ty * 4 + i];  // a broadcast per half-warp
      OT_GEMM_F32_UNROLL
      for (int j = 0; j < 4; ++j) b[j] = sw[kk * kGemmF32RowWords + tx + 16 * j];  // consecutive banks
      OT_GEMM_F32_UNROLL
      for (int i = 0; i < 4; ++i) {
        OT_GEMM_F32_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] = ot_cuda::fma(a[i], b[j], acc[i][j]);
      }
    }
    ctx.sync();  // before the next stage overwrites what the threads read
  }

  OT_GEMM_F32_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int row = m0 + ty * 4 + i;
    if (row >= m) continue;
    float* yr = y + static_cast<std::size_t>(row) * static_cast<std::size_t>(n);
    OT_GEMM_F32_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + tx + 16 * j;
      if (col < n) yr[col] = accumulate ? yr[col] + acc[i][j] : acc[i][j];
    }
  }
}

}  // namespace ot_cuda::kernels

#undef OT_GEMM_F32_UNROLL
