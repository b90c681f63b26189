// Serving attention over the paged KV cache (vLLM style): cache_write scatters new
// tokens' K/V into their slots; paged_attention runs chunked-prefill and decode
// rows alike, each row over the positions 0..p of its sequence.
#include <algorithm>
#include <cstring>
#include <vector>

#include "attention.h"
#include "attention_tile.h"
#include "thread_pool.h"

namespace ot {

using attn::attend_rows;
using attn::fine_grain;
using attn::PagedCursor;
using attn::RowBlock;

void cache_write(const PagedKvCache& c, const float* k, const float* v, int64_t n_tokens, const int32_t* slots) {
  const int64_t row = c.num_kv_heads * c.head_dim;
  const size_t bytes = static_cast<size_t>(row) * sizeof(float);
  // A chunk copies at least ~64 KiB, so a decode step's few rows stay on the caller.
  const int64_t min_rows = std::max<int64_t>(1, (64 * 1024) / std::max<int64_t>(1, 2 * static_cast<int64_t>(bytes)));
  parallel_for(n_tokens, std::max(grain_for(n_tokens), min_rows), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (slots[i] < 0) continue;
      std::memcpy(c.key + slots[i] * row, k + i * row, bytes);
      std::memcpy(c.value + slots[i] * row, v + i * row, bytes);
    }
  });
}

namespace {

/**
 * The starts of runs of consecutive rows (one sequence, consecutive positions),
 * at most `limit` rows each, and n_rows at the end: a prefill chunk's rows share
 * their K/V tiles; decode rows, each of its own sequence, stay alone. The
 * caller's thread keeps the list, so a decode step's layers allocate nothing.
 */
const std::vector<int64_t>& row_runs(const PagedRows& rows, int64_t limit) {
  thread_local std::vector<int64_t> starts;
  starts.clear();
  for (int64_t i = 0; i < rows.n_rows;) {
    starts.push_back(i);
    int64_t j = i + 1;
    while (j < rows.n_rows && j - i < limit && rows.row_seq[j] == rows.row_seq[i] &&
           rows.row_pos[j] == rows.row_pos[i] + (j - i)) {
      ++j;
    }
    i = j;
  }
  starts.push_back(rows.n_rows);
  return starts;
}

}  // namespace

void paged_attention(const AttentionHeads& h, const PagedRows& rows, const PagedKvCache& c, const float* q,
                     float* out) {
  const int64_t kv = h.num_kv_heads, d = h.head_dim, group = h.num_heads / kv;
  const std::vector<int64_t>& runs = row_runs(rows, attn::rows_per_block(group));
  const int64_t tasks = static_cast<int64_t>(runs.size() - 1) * kv;  // (run, kv head)
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t run = task / kv, g = task % kv, i = runs[run];
      const PagedCursor cursor{rows.block_tables + rows.row_seq[i] * rows.max_blocks_per_seq, c.block_size, kv * d,
                               c.block_size * kv * d, g * d};
      const int64_t at = (i * h.num_heads + g * group) * d;
      const RowBlock block{q + at, out + at, nullptr, runs[run + 1] - i, h.num_heads * d, 0, rows.row_pos[i] + 1};
      attend_rows(block, group, d, h.scale, cursor, c.key, c.value);
    }
  });
}

}  // namespace ot
