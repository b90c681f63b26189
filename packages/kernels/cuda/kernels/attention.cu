// The device target of kernels/attention.cuh: cache_write and paged_attention.
//
// Budget, checked by scripts/compile-gate.sh on sm_80 and sm_90a:
// compile-gate: max-registers 64
// compile-gate: max-static-smem 0
// compile-gate: ptx shfl.sync.bfly
// compile-gate: ptx ex2.approx
// compile-gate: ptx bar.sync
#include <cstdint>

#include "../include/ot_cuda/launch.h"
#include "attention.cuh"
#include "launchers.h"  // the launcher's declaration, checked against its definition here

// The launchers are declared here (not in launchers.h) until the addon binds
// them; the definitions below must match these.

namespace k = ot_cuda::kernels;

OT_KERNEL(ot_cache_write_f32_kernel, (k::kCacheWriteMaxThreads),
          (const float* __restrict__ kk, const float* __restrict__ v, const std::int32_t* __restrict__ slot_mapping,
           float* __restrict__ key_cache, float* __restrict__ value_cache, std::int64_t num_slots, int row_floats),
          k::cache_write(ctx, kk, v, slot_mapping, key_cache, value_cache, num_slots, row_floats))

// 128 threads: ptxas may use up to 255 registers; the budget keeps it at 64
// (acc[8] per thread plus addressing).
OT_KERNEL(ot_paged_attention_f32_kernel, (k::kAttnThreads), (const k::PagedAttentionParams p),
          k::paged_attention(ctx, p))

extern "C" cudaError_t ot_cuda_cache_write_f32(const float* kk, const float* v, const std::int32_t* slot_mapping,
                                               int n_tokens, float* key_cache, float* value_cache, int num_blocks,
                                               int block_size, int num_kv_heads, int head_dim, cudaStream_t stream) {
  if (n_tokens < 0 || num_blocks < 0 || block_size <= 0 || num_kv_heads <= 0 || head_dim <= 0) {
    return cudaErrorInvalidValue;
  }
  if (n_tokens == 0) return cudaSuccess;
  const int row_floats = num_kv_heads * head_dim;
  return OT_LAUNCH(ot_cache_write_f32_kernel, n_tokens, k::cache_write_block_threads(row_floats), 0, stream, kk, v,
                   slot_mapping, key_cache, value_cache, static_cast<std::int64_t>(num_blocks) * block_size,
                   row_floats);
}

extern "C" cudaError_t ot_cuda_paged_attention_f32(const float* q, float* out, int n_rows, const std::int32_t* row_seq,
                                                   const std::int32_t* row_pos, const std::int32_t* block_tables,
                                                   int max_blocks_per_seq, const float* key_cache,
                                                   const float* value_cache, int block_size, int num_heads,
                                                   int num_kv_heads, int head_dim, float scale, cudaStream_t stream) {
  if (n_rows < 0 || max_blocks_per_seq <= 0 || block_size <= 0 || num_kv_heads > 65535 ||
      !k::paged_attention_supports(num_heads, num_kv_heads, head_dim)) {
    return cudaErrorInvalidValue;
  }
  if (n_rows == 0) return cudaSuccess;
  const k::PagedAttentionParams p{q,         out,         row_seq,    row_pos,   block_tables, max_blocks_per_seq,
                                  key_cache, value_cache, block_size, num_heads, num_kv_heads, head_dim,
                                  scale};
  const ot_cuda::Dim3 grid{static_cast<unsigned>(n_rows), static_cast<unsigned>(num_kv_heads)};
  return OT_LAUNCH(ot_paged_attention_f32_kernel, grid, k::kAttnThreads,
                   k::paged_attention_shared_bytes(num_heads / num_kv_heads, head_dim), stream, p);
}
