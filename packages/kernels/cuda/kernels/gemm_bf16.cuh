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
//
// The tile machinery is gemm_bf16_tile<ATransposed, BTransposed>: out[r, c]
// (+)= sum_j A(r, j) * B(c, j), where an operand stored "transposed" holds
// A(r, j) at a[j * lda + r] instead of a[r * lda + j]. The staging pass packs
// pairs of consecutive j either way, so the warps' fragment loads and mma
// steps are the same code for every product:
//   gemm_bf16_xwt              y  = x W^T      (A = x,  B = W,  neither transposed)
//   gemm_bf16_backward_input   dx = dy W       (A = dy, B = W transposed)
//   gemm_bf16_backward_weight  dW += dy^T x    (A = dy transposed, B = x transposed)
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

// Two bf16 of operand row `row` at reduction index j and j + 1 as one b32 (j
// in the low half), zero past the operand's edge (rows x depth). Not
// transposed: element (row, j) at a[row * ld + j]; transposed: at a[j * ld + row].
template <bool Transposed>
OT_HD OT_FORCEINLINE std::uint32_t gemm_bf16_pair(const std::uint16_t* a, int ld, int row, int rows, int j,
                                                  int depth) {
  if (row >= rows) return 0;
  const std::size_t sld = static_cast<std::size_t>(ld);
  if constexpr (Transposed) {
    const std::uint16_t* p = a + static_cast<std::size_t>(row);
    const std::uint32_t lo = j < depth ? p[static_cast<std::size_t>(j) * sld] : 0u;
    const std::uint32_t hi = j + 1 < depth ? p[static_cast<std::size_t>(j + 1) * sld] : 0u;
    return lo | (hi << 16);
  } else {
    const std::uint16_t* p = a + static_cast<std::size_t>(row) * sld;
    const std::uint32_t lo = j < depth ? p[j] : 0u;
    const std::uint32_t hi = j + 1 < depth ? p[j + 1] : 0u;
    return lo | (hi << 16);
  }
}

// out[r, c] (+)= sum_{j < depth} A(r, j) * B(c, j) for r < rows, c < cols;
// out is rows x cols row-major f32. A not transposed: A(r, j) = a[r * lda + j];
// transposed: a[j * lda + r] (a = a_op; B likewise from b_op with ldb). accumulate adds to out
// instead of overwriting it.
template <bool ATransposed, bool BTransposed, class Ctx>
OT_HD void gemm_bf16_tile(Ctx& ctx, const std::uint16_t* a_op, int lda, const std::uint16_t* b_op, int ldb, float* out,
                          int rows, int cols, int depth, bool accumulate) {
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
                "the staging loop gives every thread the same number of words of A and of B");
  for (int k0 = 0; k0 < depth; k0 += kGemmTileK) {
    // Stage: consecutive threads take consecutive elements in memory: the k
    // pairs of a row where the operand runs along k, the rows of a pair of k
    // where it is transposed.
    OT_GEMM_UNROLL
    for (int j = 0; j < kStageWords / (kGemmWarps * kWarpSize); ++j) {
      const int i = tid + j * kGemmWarps * kWarpSize;
      const int ra = ATransposed ? i % kGemmTileM : i / (kGemmTileK / 2);
      const int pa = ATransposed ? i / kGemmTileM : i % (kGemmTileK / 2);
      sx[ra * kGemmRowWords + pa] = gemm_bf16_pair<ATransposed>(a_op, lda, m0 + ra, rows, k0 + 2 * pa, depth);
      const int rb = BTransposed ? i % kGemmTileN : i / (kGemmTileK / 2);
      const int pb = BTransposed ? i / kGemmTileN : i % (kGemmTileK / 2);
      sw[rb * kGemmRowWords + pb] = gemm_bf16_pair<BTransposed>(b_op, ldb, n0 + rb, cols, k0 + 2 * pb, depth);
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

  // D fragment: acc[.][.][0..1] = out[g][2t, 2t+1], [2..3] = out[g + 8][2t, 2t+1].
  OT_GEMM_UNROLL
  for (int mi = 0; mi < 2; ++mi) {
    OT_GEMM_UNROLL
    for (int ni = 0; ni < 4; ++ni) {
      const int col = n0 + wn + ni * 8 + 2 * t;
      OT_GEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + mi * 16 + g + 8 * h;
        if (row >= rows) continue;
        float* yr = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(cols);
        if (col < cols) yr[col] = accumulate ? yr[col] + acc[mi][ni][2 * h] : acc[mi][ni][2 * h];
        if (col + 1 < cols) yr[col + 1] = accumulate ? yr[col + 1] + acc[mi][ni][2 * h + 1] : acc[mi][ni][2 * h + 1];
      }
    }
  }
}

// y[m, n] = x[m, k] W[n, k]^T (our `linear`). Grid gemm_bf16_grid(m, n).
template <class Ctx>
OT_HD void gemm_bf16_xwt(Ctx& ctx, const std::uint16_t* x, const std::uint16_t* w, float* y, int m, int n, int k) {
  gemm_bf16_tile<false, false>(ctx, x, k, w, k, y, m, n, k, false);
}

// dx[m, k] = dy[m, n] W[n, k] (`linearBackwardInput`): A = dy rows, B(c, j) =
// W[j, c]. Grid gemm_bf16_grid(m, k).
template <class Ctx>
OT_HD void gemm_bf16_backward_input(Ctx& ctx, const std::uint16_t* dy, const std::uint16_t* w, float* dx, int m,
                                    int n, int k) {
  gemm_bf16_tile<false, true>(ctx, dy, n, w, k, dx, m, k, n, false);
}

// dW[n, k] += dy[m, n]^T x[m, k] (`linearBackwardWeight`, accumulated in f32):
// A(r, j) = dy[j, r], B(c, j) = x[j, c]. Grid gemm_bf16_grid(n, k).
template <class Ctx>
OT_HD void gemm_bf16_backward_weight(Ctx& ctx, const std::uint16_t* dy, const std::uint16_t* x, float* dw, int m,
                                     int n, int k) {
  gemm_bf16_tile<true, true>(ctx, dy, n, x, k, dw, n, k, m, true);
}

}  // namespace ot_cuda::kernels

#undef OT_GEMM_UNROLL
