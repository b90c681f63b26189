// The device target of kernels/sample.cuh.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 80
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx bar.sync
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "launchers.h"  // the launcher's declaration, checked against its definition here
#include "sample.cuh"

namespace k = ot_cuda::kernels;

// Declared here (not in launchers.h yet): the definition below must match.

// At least 3 blocks of 256 per SM (≤ 85 registers): without a minimum, ptxas for
// sm_80 picked 40 registers and spilled the search's f64 state.
OT_KERNEL(ot_sample_f32_kernel, (k::kSampleMaxWarps * ot_cuda::kWarpSize, 3), (k::SampleArgs a), k::sample_f32(ctx, a))

// Per draw d < draws: row_of[d] in [0, rows), temperatures[d] ≥ 0 finite, top_k[d]
// (≤ 0 = off), top_p[d] in (0, 1], min_p[d] in [0, 1], uniforms[d] in [0, 1)
// (the binding checks them, as sampleRows does); writes tokens[d] and logprobs[d]
// (log π(token) at temperature 1). All pointers are device memory.
extern "C" cudaError_t ot_cuda_sample_rows_f32(const float* logits, int rows, int vocab, const std::int32_t* row_of,
                                               int draws, const double* temperatures, const std::int32_t* top_k,
                                               const double* top_p, const double* min_p, const double* uniforms,
                                               std::int32_t* tokens, double* logprobs, cudaStream_t stream) {
  if (rows < 0 || vocab <= 0 || draws < 0) return cudaErrorInvalidValue;
  if (draws == 0) return cudaSuccess;
  if (rows == 0) return cudaErrorInvalidValue;
  const int threads = k::sample_block_threads(vocab);
  const k::SampleArgs a{logits, vocab, row_of, temperatures, top_k, top_p, min_p, uniforms, tokens, logprobs};
  return OT_LAUNCH(ot_sample_f32_kernel, draws, threads, k::sample_shared_bytes(threads), stream, a);
}
