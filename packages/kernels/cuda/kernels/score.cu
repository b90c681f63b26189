// The device target of kernels/score.cuh: one kernel per list length K
// (1, 2, 4, …, kScoreMaxK), the launcher picking the smallest K ≥ k.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 96
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx bar.sync
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "launchers.h"
#include "score.cuh"

namespace k = ot_cuda::kernels;

// 256 threads at most (score_block_threads); K = 32 keeps 32 u64 ranks (64
// registers) per thread, hence at least 2 blocks per SM (≤ 128 registers).
#define OT_SCORE_BOUNDS (k::kScoreMaxWarps * ot_cuda::kWarpSize, 2)
OT_KERNEL(ot_score_rows_k1_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<1>(ctx, a))
OT_KERNEL(ot_score_rows_k2_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<2>(ctx, a))
OT_KERNEL(ot_score_rows_k4_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<4>(ctx, a))
OT_KERNEL(ot_score_rows_k8_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<8>(ctx, a))
OT_KERNEL(ot_score_rows_k16_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<16>(ctx, a))
OT_KERNEL(ot_score_rows_k32_f32_kernel, OT_SCORE_BOUNDS, (k::ScoreArgs a), k::score_rows_f32<32>(ctx, a))
#undef OT_SCORE_BOUNDS

// Per row r < rows: logprobs[r] = log π(targets[r]) (targets in [0, vocab), the
// binding checks them), and the k (≤ k::kScoreMaxK, ≤ vocab) most likely tokens
// in top_ids [rows, k] and their log π in top_logprobs [rows, k]; top_ids and
// top_logprobs may be null when k is 0. All pointers are device memory.
extern "C" cudaError_t ot_cuda_score_rows_f32(const float* logits, int rows, int vocab, const std::int32_t* targets,
                                              int k, double* logprobs, std::int32_t* top_ids, double* top_logprobs,
                                              cudaStream_t stream) {
  if (rows < 0 || vocab <= 0 || k < 0 || k > vocab || k > k::kScoreMaxK) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const k::ScoreArgs a{logits, targets, vocab, k, logprobs, top_ids, top_logprobs};
  const int threads = k::score_block_threads(vocab);
  const std::size_t shared = k::score_shared_bytes();
  // The instantiation k::score_with_local_k picks (the tests' launch).
  switch (k::score_local_k(k)) {
    case 1:
      return OT_LAUNCH(ot_score_rows_k1_f32_kernel, rows, threads, shared, stream, a);
    case 2:
      return OT_LAUNCH(ot_score_rows_k2_f32_kernel, rows, threads, shared, stream, a);
    case 4:
      return OT_LAUNCH(ot_score_rows_k4_f32_kernel, rows, threads, shared, stream, a);
    case 8:
      return OT_LAUNCH(ot_score_rows_k8_f32_kernel, rows, threads, shared, stream, a);
    case 16:
      return OT_LAUNCH(ot_score_rows_k16_f32_kernel, rows, threads, shared, stream, a);
    default:
      return OT_LAUNCH(ot_score_rows_k32_f32_kernel, rows, threads, shared, stream, a);
  }
}
