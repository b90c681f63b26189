// Reductions every op needs, written once against the context (ctx.h).
#pragma once

#include "ctx.h"

namespace ot_cuda {

// Sum over the 32 lanes of a full warp, every lane receiving the total: a
// butterfly (shfl.sync.bfly), so no lane needs a second broadcast step.
template <class Ctx>
OT_HD OT_FORCEINLINE float warp_sum(Ctx& ctx, float v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += ctx.shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Sum over the whole block, every thread receiving the total. The block must
// be a whole number of warps; scratch holds one float per warp. Lane 0 of
// each warp publishes its warp's sum, one sync(), then every warp reduces the
// partials itself (no second barrier to broadcast a result). The caller must
// sync() before scratch is written again (a second block_sum): the race check
// fails a kernel that does not.
template <class Ctx, class Scratch>
OT_HD OT_FORCEINLINE float block_sum(Ctx& ctx, float v, const Scratch& scratch) {
  const Dim3 d = ctx.block_dim();
  const unsigned warps = (d.x * d.y * d.z + kWarpSize - 1) / kWarpSize;
  v = warp_sum(ctx, v);
  if (ctx.lane() == 0) scratch[ctx.warp()] = v;
  ctx.sync();
  const float partial = ctx.lane() < warps ? static_cast<float>(scratch[ctx.lane()]) : 0.0f;
  return warp_sum(ctx, partial);
}

}  // namespace ot_cuda
