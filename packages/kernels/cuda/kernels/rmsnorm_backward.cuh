// RMSNorm's backward, written once (device target rmsnorm_backward.cu, tests
// test/test_rmsnorm_backward.cpp), the formulas of ../../src/cpu/norm.cc:
//
//   r_i      = inv_rms[i], or 1 / sqrt(mean_k x[i, k]² + eps) when inv_rms is null
//   dx[i, k] (= or +=, per `accumulate`) r·w_k·g_k − (r³/d)·x_k·Σ_j g_j·w_j·x_j
//   dw[k]   += Σ_i g[i, k]·x[i, k]·r_i                 (skipped when dw is null)
//
// One block per row (grid.x = rows), whole warps (rmsnorm_backward_block_threads).
// Σ g·w·x and, when r is recomputed, Σ x² are block sums in one pass, each
// with its own float per warp of shared memory (rmsnorm_backward_shared_bytes:
// two regions, so no barrier between the two sums). dw takes one atomic per
// element per row (atom.global.add.f32; ptxas makes it a RED), so its summation order is not fixed.
// dx must not alias d_out or x.
#pragma once

#include "../include/ot_cuda/reduce.h"

namespace ot_cuda::kernels {

OT_HD constexpr int rmsnorm_backward_block_threads(int cols) {
  const int warps = (cols + kWarpSize - 1) / kWarpSize;
  return (warps < 1 ? 1 : warps > 8 ? 8 : warps) * kWarpSize;
}
OT_HD constexpr std::size_t rmsnorm_backward_shared_bytes(int threads) {
  return 2 * static_cast<std::size_t>(threads / kWarpSize) * sizeof(float);
}

template <class Ctx>
OT_HD void rmsnorm_backward_f32(Ctx& ctx, const float* x, const float* w, const float* inv_rms, float eps,
                                const float* d_out, float* dx, bool accumulate, float* dw, int cols) {
  const std::int64_t row = ctx.block_idx().x;
  const int tid = static_cast<int>(ctx.thread_idx().x), stride = static_cast<int>(ctx.block_dim().x);
  const float* xr = x + row * cols;
  const float* gr = d_out + row * cols;
  float* dxr = dx + row * cols;

  float gwx = 0.0f, xx = 0.0f;
  for (int c = tid; c < cols; c += stride) {
    const float xc = xr[c];
    gwx = ot_cuda::fma(gr[c] * w[c], xc, gwx);
    xx = ot_cuda::fma(xc, xc, xx);
  }
  const unsigned warps = static_cast<unsigned>(stride) / kWarpSize;
  const float dot = block_sum(ctx, gwx, shared_array<float>(ctx));
  float r;
  if (inv_rms != nullptr) {  // the same for the whole block: no divergent sync()
    r = inv_rms[row];
  } else {
    const float total = block_sum(ctx, xx, shared_array<float>(ctx, warps * sizeof(float)));
    r = ot_cuda::rsqrt(total / static_cast<float>(cols) + eps);
  }

  const float coef = r * r * r / static_cast<float>(cols) * dot;
  for (int c = tid; c < cols; c += stride) {
    const float gc = gr[c], xc = xr[c];
    const float v = gc * w[c] * r - coef * xc;
    dxr[c] = accumulate ? dxr[c] + v : v;
    if (dw != nullptr) ctx.atomic_add(dw + c, gc * xc * r);
  }
}

}  // namespace ot_cuda::kernels
