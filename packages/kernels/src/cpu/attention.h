// Causal attention with grouped-query heads (GQA), fp32, row-major.
//
// Serving (paged KV cache, vLLM style): keys and values live in blocks of
// `block_size` token slots, [num_blocks, block_size, num_kv_heads, head_dim];
// a sequence's block table maps its logical block b to a physical block id.
//   cache_write:      scatters new tokens' K/V into their slots.
//   paged_attention:  one unified op for chunked-prefill rows and decode rows:
//                     row i of sequence s at position p attends to positions 0..p.
// Training (packed, unpaged): sequences are concatenated along the token axis and
// delimited by seq_starts; attention is causal within each sequence.
//   attention_forward:  out and the log-sum-exp of each row's scaled scores.
//   attention_backward: FlashAttention-2 style (probabilities recomputed from lse).
//
// Query head h uses kv head h / (num_heads / num_kv_heads). Softmax runs in fp32
// with a running max (online softmax). Callers validate every index first.
#pragma once

#include <cstdint>

namespace ot {

struct PagedKvCache {
  float* key;    // [num_blocks, block_size, num_kv_heads, head_dim]
  float* value;  // [num_blocks, block_size, num_kv_heads, head_dim]
  int64_t num_blocks, block_size, num_kv_heads, head_dim;
};

struct AttentionHeads {
  int64_t num_heads, num_kv_heads, head_dim;
  float scale;  // applied to q·k before the softmax
};

/** Rows of a paged-attention batch: row i is sequence row_seq[i] at position row_pos[i]. */
struct PagedRows {
  int64_t n_rows;
  const int32_t* row_seq;       // [n_rows]
  const int32_t* row_pos;       // [n_rows]
  const int32_t* block_tables;  // [num_seqs, max_blocks_per_seq]
  int64_t max_blocks_per_seq;
};

/** k, v [n_tokens, num_kv_heads, head_dim] into slot_mapping[i] (-1: skip). */
void cache_write(const PagedKvCache& cache, const float* k, const float* v, int64_t n_tokens,
                 const int32_t* slot_mapping);

/** q, out [n_rows, num_heads, head_dim]. out must not overlap q. */
void paged_attention(const AttentionHeads& h, const PagedRows& rows, const PagedKvCache& cache, const float* q,
                     float* out);

/** q/out [n_tokens, num_heads, head_dim], k/v [n_tokens, num_kv_heads, head_dim],
 *  seq_starts [num_seqs + 1], lse [n_tokens, num_heads]. Outputs are overwritten. */
void attention_forward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                       const float* q, const float* k, const float* v, float* out, float* lse);

/** Gradients of Σ d_out ⊙ out; dq, dk, dv (shaped like q, k, v) are overwritten. */
void attention_backward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                        const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* d_out, float* dq, float* dk, float* dv);

}  // namespace ot
