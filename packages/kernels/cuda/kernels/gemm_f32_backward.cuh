// The f32 dense GEMM's backward products on CUDA cores, written once: nvcc
// compiles them in gemm_f32_backward.cu, the tests run them in the CPU
// execution (test/test_gemm_f32_backward.cpp).
//
//   dx[r, c] (+)= sum_j dy[r, j] * W[j, c]      (dx = dy W:      backward_input)
//   dW[r, c] (+)= sum_j dy[j, r] * x[j, c]      (dW = dy^T x:    backward_weight)
//
// dy is m x n, W is n x k, x is m x k, dx is m x k, dW is n x k, all row-major
// f32; accumulate adds to the output instead of overwriting it. Any sizes >= 1
// (edges guarded; an empty reduction writes zeros, or leaves the output as it
// is when accumulating).
//
// The tile machinery is gemm_f32.cuh's, with the operand layout made a
// template parameter: gemm_f32_tile<ATransposed, BTransposed> computes
// out[r, c] (+)= sum_j A(r, j) * B(c, j), where an operand stored "transposed"
// holds A(r, j) at a[j * lda + r] instead of a[r * lda + j] (as
// gemm_bf16_tile). Block, tile and thread mapping are gemm_f32_xwt's: 256
// threads compute a 64 x 64 tile of out (grid = gemm_f32_grid(rows, cols)),
// thread (tx = tid % 16, ty = tid / 16) owning rows ty * 4 + i and columns
// tx + 16 j (i, j < 4), fma in j order; the j loop steps 16 at a time through
// shared memory staged k-major (s[jj][row], rows padded to 65 words). Only the
// staging loads differ: consecutive threads take consecutive elements in
// memory, the 16 j of a row where the operand runs along j, the 64 rows of
// one j where it is transposed (one 128-byte line per warp), so every load is
// coalesced whichever way the operand is stored.
//   gemm_f32_backward_input   dx = dy W      (A = dy, B = W transposed)
//   gemm_f32_backward_weight  dW = dy^T x    (A = dy transposed, B = x transposed)
//   (gemm_f32_xwt             y  = x W^T     is gemm_f32_tile<false, false>: same bits)
#pragma once

#include "gemm_f32.cuh"

#if defined(__CUDA_ARCH__)
#define OT_GEMM_F32_BWD_UNROLL _Pragma("unroll")
#else
#define OT_GEMM_F32_BWD_UNROLL
#endif

namespace ot_cuda::kernels {

// Launch shapes: gemm_f32's block and shared memory, a tile per 64 x 64 of
// the output (rows on grid.y, at most 65535 tiles).
OT_HD constexpr Dim3 gemm_f32_backward_input_grid(int m, int k) { return gemm_f32_grid(m, k); }
OT_HD constexpr Dim3 gemm_f32_backward_weight_grid(int n, int k) { return gemm_f32_grid(n, k); }

// Stages element i (< 64 x 16) of the operand's rows [row0, row0 + 64) x
// reduction [j0, j0 + 16) into s[jj * 65 + r], zero past the operand's edge
// (rows x depth). Not transposed: element (row, j) at p[row * ld + j], i
// running along j (gemm_f32_xwt's staging); transposed: at p[j * ld + row], i
// running along the rows, so consecutive threads read consecutive addresses
// either way (and, transposed, also store to consecutive banks).
template <bool Transposed, class Shared>
OT_HD OT_FORCEINLINE void gemm_f32_stage(const Shared& s, const float* p, int ld, int row0, int rows, int j0, int depth,
                                         int i) {
  const int r = Transposed ? i % kGemmF32TileM : i / kGemmF32TileK;
  const int jj = Transposed ? i / kGemmF32TileM : i % kGemmF32TileK;
  const std::size_t row = static_cast<std::size_t>(row0 + r), j = static_cast<std::size_t>(j0 + jj);
  const std::size_t at = Transposed ? j * static_cast<std::size_t>(ld) + row : row * static_cast<std::size_t>(ld) + j;
  s[jj * kGemmF32RowWords + r] = row0 + r < rows && j0 + jj < depth ? p[at] : 0.0f;
}

// out[r, c] (+)= sum_{j < depth} A(r, j) * B(c, j) for r < rows, c < cols;
// out is rows x cols row-major f32. A not transposed: A(r, j) = a[r * lda + j];
// transposed: a[j * lda + r] (B likewise from b with ldb). Grid
// gemm_f32_grid(rows, cols), gemm_f32_block_threads(), gemm_f32_shared_bytes().
template <bool ATransposed, bool BTransposed, class Ctx>
OT_HD void gemm_f32_tile(Ctx& ctx, const float* a, int lda, const float* b, int ldb, float* out, int rows, int cols,
                         int depth, bool accumulate) {
  const auto sa = shared_array<float>(ctx, 0);
  const auto sb = shared_array<float>(ctx, kGemmF32TileK * kGemmF32RowWords * sizeof(float));
  const int tid = static_cast<int>(ctx.linear_tid());
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = static_cast<int>(ctx.block_idx().y) * kGemmF32TileM;
  const int n0 = static_cast<int>(ctx.block_idx().x) * kGemmF32TileN;

  float acc[4][4];
  OT_GEMM_F32_BWD_UNROLL
  for (int i = 0; i < 4; ++i) {
    OT_GEMM_F32_BWD_UNROLL
    for (int jn = 0; jn < 4; ++jn) acc[i][jn] = 0.0f;
  }

  constexpr int kStage = kGemmF32TileM * kGemmF32TileK;
  static_assert(kGemmF32TileM == kGemmF32TileN && kStage % kGemmF32Threads == 0,
                "the staging loop gives every thread the same number of elements of A and of B");
  for (int j0 = 0; j0 < depth; j0 += kGemmF32TileK) {
    OT_GEMM_F32_BWD_UNROLL
    for (int t = 0; t < kStage / kGemmF32Threads; ++t) {
      const int i = tid + t * kGemmF32Threads;
      gemm_f32_stage<ATransposed>(sa, a, lda, m0, rows, j0, depth, i);
      gemm_f32_stage<BTransposed>(sb, b, ldb, n0, cols, j0, depth, i);
    }
    ctx.sync();

    OT_GEMM_F32_BWD_UNROLL
    for (int jj = 0; jj < kGemmF32TileK; ++jj) {
      float av[4], bv[4];
      OT_GEMM_F32_BWD_UNROLL
      for (int i = 0; i < 4; ++i) av[i] = sa[jj * kGemmF32RowWords + ty * 4 + i];  // a broadcast per half-warp
      OT_GEMM_F32_BWD_UNROLL
      for (int jn = 0; jn < 4; ++jn) bv[jn] = sb[jj * kGemmF32RowWords + tx + 16 * jn];  // consecutive banks
      OT_GEMM_F32_BWD_UNROLL
      for (int i = 0; i < 4; ++i) {
        OT_GEMM_F32_BWD_UNROLL
        for (int jn = 0; jn < 4; ++jn) acc[i][jn] = ot_cuda::fma(av[i], bv[jn], acc[i][jn]);
      }
    }
    ctx.sync();  // before the next stage overwrites what the threads read
  }

  OT_GEMM_F32_BWD_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int row = m0 + ty * 4 + i;
    if (row >= rows) continue;
    float* orow = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(cols);
    OT_GEMM_F32_BWD_UNROLL
    for (int jn = 0; jn < 4; ++jn) {
      const int col = n0 + tx + 16 * jn;
      if (col < cols) orow[col] = accumulate ? orow[col] + acc[i][jn] : acc[i][jn];
    }
  }
}

// dx[m, k] (+)= dy[m, n] W[n, k] (`linearBackwardInput`): A = dy rows, B(c, j)
// = W[j, c]. Grid gemm_f32_backward_input_grid(m, k).
template <class Ctx>
OT_HD void gemm_f32_backward_input(Ctx& ctx, const float* dy, const float* w, float* dx, int m, int n, int k,
                                   bool accumulate) {
  gemm_f32_tile<false, true>(ctx, dy, n, w, k, dx, m, k, n, accumulate);
}

// dW[n, k] (+)= dy[m, n]^T x[m, k] (`linearBackwardWeight`): A(r, j) = dy[j, r],
// B(c, j) = x[j, c]. Grid gemm_f32_backward_weight_grid(n, k).
template <class Ctx>
OT_HD void gemm_f32_backward_weight(Ctx& ctx, const float* dy, const float* x, float* dw, int m, int n, int k,
                                    bool accumulate) {
  gemm_f32_tile<true, true>(ctx, dy, n, x, k, dw, n, k, m, accumulate);
}

}  // namespace ot_cuda::kernels

#undef OT_GEMM_F32_BWD_UNROLL
