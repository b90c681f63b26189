// Dense bf16 GEMM on tensor cores, written once: nvcc compiles it in
// gemm_bf16.cu (the fallback when cuBLASLt is absent), the tests run it in the
// CPU execution (test/test_gemm_bf16.cpp).
//
//   y[r, c] = sum_k x[r, k] * W[c, k]      (y = x W^T: our `linear`)
//
// x is m x k, W is n x k, both row-major bf16 (as uint16 bits); y is m x n
// row-major f32, accumulated in f32 by mma.sync m16n8k16 (ctx.h). Any m, n,
// k >= 1: edges are zero-padded on the way into shared memory and guarded on
// the way out, so k need not be a multiple of 16.
//
// A block computes a 64 x 64 tile of y (grid = gemm_bf16_grid: x over column
// tiles, y over row tiles) with 4 warps, each a 32 x 32 quarter = 2 x 4 mma
// tiles of 16 x 8 (32 f32 accumulators per lane). The k loop steps 32 at a
// time: the block stages x[64 rows, 32 k] and W[64 rows, 32 k] in shared
// memory as b32 words of two consecutive-k bf16 (exactly what one A or B
// fragment register holds: ctx.h), sync(), each warp runs 2 k16 steps of 8
// mma, sync() before the next stage overwrites the tile.
#pragma once

#include "../include/ot_cuda/ctx.h"

#if defined(__CUDA_ARCH__)
#define OT_GEMM_UNROLL _Pragma("unroll")
#else
#define OT_GEMM_UNROLL
#endif

namespace ot_cuda::kernels {

inline constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 32;
inline constexpr int kGemmWarps = 4;
// A staged row is kGemmTileK / 2 = 16 words, padded to 20: the 32 lanes of a
// fragment load read words g * 20 + t (g < 8, t < 4), 32 distinct banks.
inline constexpr int kGemmRowWords = kGemmTileK / 2 + 4;

OT_HD constexpr int gemm_bf16_block_threads() { return kGemmWarps * kWarpSize; }
OT_HD constexpr std::size_t gemm_bf16_shared_bytes() {
  return static_cast<std::size_t>(kGemmTileM + kGemmTileN) * kGemmRowWords * sizeof(std::uint32_t);
}
// Column tiles on x (2^31 - 1 of them), row tiles on y (at most 65535, so
// m <= 4194240).
OT_HD constexpr Dim3 gemm_bf16_grid(int m, int n) {
  return Dim3{static_cast<unsigned>((n + kGemmTileN - 1) / kGemmTileN),
              static_cast<unsigned>((m + kGemmTileM - 1) / kGemmTileM), 1};
}

// Two bf16 of row `row` at k and k + 1 as one b32 (k in the low half), zero
// past the matrix's edge.
OT_HD OT_FORCEINLINE std::uint32_t gemm_bf16_pair(const std::uint16_t* a, int row, int rows, int k, int cols) {
  if (row >= rows) return 0;
  const std::uint16_t* p = a + static_cast<std::size_t>(row) * static_cast<std::size_t>(cols);
  const std::uint32_t lo = k < cols ? p[k] : 0u;
  const std::uint32_t hi = k + 1 < cols ? p[k + 1] : 0u;
  return lo | (hi << 16);
}

template <class Ctx>
OT_HD void gemm_bf16_xwt(Ctx& ctx, const std::uint16_t* x, const std::uint16_t* w, float* y, int m, int n, int k) {
  const auto sx = shared_array<std::uint32_t>(ctx, 0);
  const auto sw = shared_array<std::uint32_t>(ctx, kGemmTileM * kGemmRowWords * sizeof(std::uint32_t));
  const int tid = static_cast<int>(ctx.linear_tid());
  const int lane = static_cast<int>(ctx.lane()), warp = static_cast<int>(ctx.warp());
  const int g = lane >> 2, t = lane & 3;  // PTX's groupID and threadID_in_group
  const int m0 = static_cast<int>(ctx.block_idx().y) * kGemmTileM;
  const int n0 = static_cast<int>(ctx.block_idx().x) * kGemmTileN;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;  // the warp's quarter of the tile

  float acc[2][4][4];
  OT_GEMM_UNROLL
  for (int mi = 0; mi < 2; ++mi) {
    OT_GEMM_UNROLL
    for (int ni = 0; ni < 4; ++ni) {
      OT_GEMM_UNROLL
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0.0f;
    }
  }

  constexpr int kStageWords = kGemmTileM * (kGemmTileK / 2);  // = kGemmTileN * (kGemmTileK / 2)
  static_assert(kGemmTileM == kGemmTileN && kStageWords % (kGemmWarps * kWarpSize) == 0,
                "the staging loop gives every thread the same number of words of x and of W");
  for (int k0 = 0; k0 < k; k0 += kGemmTileK) {
    // Stage: consecutive threads take consecutive k pairs of a row.
    OT_GEMM_UNROLL
    for (int j = 0; j < kStageWords / (kGemmWarps * kWarpSize); ++j) {
      const int i = tid + j * kGemmWarps * kWarpSize;
      const int r = i / (kGemmTileK / 2), p = i % (kGemmTileK / 2);
      sx[r * kGemmRowWords + p] = gemm_bf16_pair(x, m0 + r, m, k0 + 2 * p, k);
      sw[r * kGemmRowWords + p] = gemm_bf16_pair(w, n0 + r, n, k0 + 2 * p, k);
    }
    ctx.sync();

    OT_GEMM_UNROLL
    for (int ks = 0; ks < kGemmTileK / 16; ++ks) {
      // A = x rows (row-major: a pair runs along k), B = W rows (col-major
      // B[k][c] = W[c][k]: a pair runs down k). Layout: ctx.h.
      std::uint32_t a[2][4], b[4][2];
      OT_GEMM_UNROLL
      for (int mi = 0; mi < 2; ++mi) {
        const int base = (wm + mi * 16 + g) * kGemmRowWords + ks * 8 + t;
        a[mi][0] = sx[base];                           // A[g    ][2t, 2t+1]
        a[mi][1] = sx[base + 8 * kGemmRowWords];       // A[g + 8][2t, 2t+1]
        a[mi][2] = sx[base + 4];                       // A[g    ][2t+8, 2t+9]
        a[mi][3] = sx[base + 8 * kGemmRowWords + 4];   // A[g + 8][2t+8, 2t+9]
      }
      OT_GEMM_UNROLL
      for (int ni = 0; ni < 4; ++ni) {
        const int base = (wn + ni * 8 + g) * kGemmRowWords + ks * 8 + t;
        b[ni][0] = sw[base];      // B[2t, 2t+1][g]
        b[ni][1] = sw[base + 4];  // B[2t+8, 2t+9][g]
      }
      OT_GEMM_UNROLL
      for (int mi = 0; mi < 2; ++mi) {
        OT_GEMM_UNROLL
        for (int ni = 0; ni < 4; ++ni) ctx.mma_m16n8k16_bf16_f32(acc[mi][ni], a[mi], b[ni], acc[mi][ni]);
      }
    }
    ctx.sync();  // before the next stage overwrites what the warps read
  }

  // D fragment: acc[.][.][0..1] = y[g][2t, 2t+1], [2..3] = y[g + 8][2t, 2t+1].
  OT_GEMM_UNROLL
  for (int mi = 0; mi < 2; ++mi) {
    OT_GEMM_UNROLL
    for (int ni = 0; ni < 4; ++ni) {
      const int col = n0 + wn + ni * 8 + 2 * t;
      OT_GEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + mi * 16 + g + 8 * h;
        if (row >= m) continue;
        float* yr = y + static_cast<std::size_t>(row) * static_cast<std::size_t>(n);
        if (col < n) yr[col] = acc[mi][ni][2 * h];
        if (col + 1 < n) yr[col + 1] = acc[mi][ni][2 * h + 1];
      }
    }
  }
}

}  // namespace ot_cuda::kernels

#undef OT_GEMM_UNROLL
