// The device target of kernels/attention_train.cuh: the training attention's
// forward, and its backward (delta, dkdv, dq).
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 80
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx ex2.approx
// compile-gate: ptx bar.sync
#include <climits>
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "attention_train.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

namespace k = ot_cuda::kernels;

// 128 threads: ptxas may use up to 255 registers; the budget keeps them lower
// (the forward's acc[4][4] and dkdv's dk, dv [4][4] each, plus addressing).
OT_KERNEL(ot_attention_train_forward_f32_kernel, (k::kTrainThreads), (const k::TrainForwardParams p),
          k::attention_train_forward(ctx, p))
OT_KERNEL(ot_attention_train_delta_f32_kernel, (k::kTrainThreads), (const k::TrainBackwardParams p),
          k::attention_train_delta(ctx, p))
OT_KERNEL(ot_attention_train_dkdv_f32_kernel, (k::kTrainThreads), (const k::TrainBackwardParams p),
          k::attention_train_dkdv(ctx, p))
OT_KERNEL(ot_attention_train_dq_f32_kernel, (k::kTrainThreads), (const k::TrainBackwardParams p),
          k::attention_train_dq(ctx, p))

namespace {

// What both launchers accept: whole GQA groups, head_dim ≤ 128, heads within
// grid.y, and [n_tokens · num_heads · head_dim] indexable by the kernels' ints
// where they count rows. seq_starts (device memory) is the caller's to check.
bool train_args_valid(int n_tokens, const std::int32_t* seq_starts, int num_seqs, int num_heads, int num_kv_heads,
                      int head_dim) {
  if (n_tokens < 0 || num_seqs < 0 || (n_tokens > 0 && (num_seqs == 0 || seq_starts == nullptr))) return false;
  if (!k::attention_train_supports(num_heads, num_kv_heads, head_dim) || num_heads > 65535) return false;
  return static_cast<long long>(n_tokens) * num_heads <= INT_MAX;
}

}  // namespace

// out [n_tokens, num_heads, head_dim] and lse [n_tokens, num_heads] (both
// overwritten) of causal attention within each packed sequence.
extern "C" cudaError_t ot_cuda_attention_forward_f32(const float* q, const float* kk, const float* v, float* out,
                                                     float* lse, int n_tokens, const std::int32_t* seq_starts,
                                                     int num_seqs, int num_heads, int num_kv_heads, int head_dim,
                                                     float scale, cudaStream_t stream) {
  if (!train_args_valid(n_tokens, seq_starts, num_seqs, num_heads, num_kv_heads, head_dim)) {
    return cudaErrorInvalidValue;
  }
  if (n_tokens == 0) return cudaSuccess;
  const k::TrainAttnShape shape{seq_starts, num_seqs, n_tokens, num_heads, num_kv_heads, head_dim, scale};
  const k::TrainForwardParams p{shape, q, kk, v, out, lse};
  return OT_LAUNCH(ot_attention_train_forward_f32_kernel, k::attention_forward_grid(n_tokens, num_heads),
                   k::kTrainThreads, k::attention_forward_shared_bytes(head_dim), stream, p);
}

// dq, dk, dv (shaped like q, k, v; overwritten) from the forward's out and
// lse. Three launches on `stream`: delta parks D_i in dq[i, h, 0], dkdv reads
// it, dq reads it back and overwrites dq.
extern "C" cudaError_t ot_cuda_attention_backward_f32(const float* q, const float* kk, const float* v, const float* out,
                                                      const float* lse, const float* d_out, float* dq, float* dk,
                                                      float* dv, int n_tokens, const std::int32_t* seq_starts,
                                                      int num_seqs, int num_heads, int num_kv_heads, int head_dim,
                                                      float scale, cudaStream_t stream) {
  if (!train_args_valid(n_tokens, seq_starts, num_seqs, num_heads, num_kv_heads, head_dim)) {
    return cudaErrorInvalidValue;
  }
  if (n_tokens == 0) return cudaSuccess;
  const k::TrainAttnShape shape{seq_starts, num_seqs, n_tokens, num_heads, num_kv_heads, head_dim, scale};
  const k::TrainBackwardParams p{shape, q, kk, v, out, lse, d_out, dq, dk, dv};
  if (const cudaError_t e = OT_LAUNCH(ot_attention_train_delta_f32_kernel, k::attention_delta_grid(n_tokens, num_heads),
                                      k::kTrainThreads, 0, stream, p);
      e != cudaSuccess) {
    return e;
  }
  if (const cudaError_t e =
          OT_LAUNCH(ot_attention_train_dkdv_f32_kernel, k::attention_dkdv_grid(n_tokens, num_kv_heads),
                    k::kTrainThreads, k::attention_dkdv_shared_bytes(head_dim), stream, p);
      e != cudaSuccess) {
    return e;
  }
  return OT_LAUNCH(ot_attention_train_dq_f32_kernel, k::attention_dq_grid(n_tokens, num_heads), k::kTrainThreads,
                   k::attention_dq_shared_bytes(head_dim), stream, p);
}
