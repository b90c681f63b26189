// JS bindings of the attention ops. Every shape, index and block id the kernels
// will touch is checked here, so a bad call throws instead of reading or writing
// out of bounds.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "attention.h"
#include "common.h"
#include "ops.h"

namespace ot {
namespace {

constexpr int64_t kMaxElements = INT64_C(1) << 46;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxHeadDim = 1 << 20;
constexpr int64_t kMaxIndex = INT32_MAX;  // counts addressed through Int32Array entries

/** The product of dims, refused as "<name> is too large" before it could overflow. */
int64_t elements(const Args& a, const char* name, std::initializer_list<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > kMaxElements / d) throw_range(a.env(), a.op, name, "is too large");
    n *= d;
  }
  return n;
}

/** numHeads, numKvHeads, headDim and scale at consecutive argument positions. */
AttentionHeads heads_arg(const Args& a, size_t first) {
  AttentionHeads h{};
  h.num_heads = a.dim(first, "numHeads", 1, kMaxHeads);
  h.num_kv_heads = a.dim(first + 1, "numKvHeads", 1, kMaxHeads);
  h.head_dim = a.dim(first + 2, "headDim", 1, kMaxHeadDim);
  if (h.num_heads % h.num_kv_heads != 0) {
    throw_range(a.env(), a.op, "numHeads",
                "(" + std::to_string(h.num_heads) + ") must be a multiple of numKvHeads (" +
                    std::to_string(h.num_kv_heads) + ")");
  }
  h.scale = a.finite(first + 3, "scale");
  return h;
}

struct Buffer {
  const char* name;
  const float* data;
  int64_t length;
};

/** Each output must overlap neither an input nor another output. */
void check_no_overlap(const Args& a, std::initializer_list<Buffer> outputs, std::initializer_list<Buffer> inputs) {
  auto overlap = [](const Buffer& x, const Buffer& y) {
    if (x.length == 0 || y.length == 0) return false;
    const auto x0 = reinterpret_cast<uintptr_t>(x.data), y0 = reinterpret_cast<uintptr_t>(y.data);
    return x0 < y0 + static_cast<uintptr_t>(y.length) * sizeof(float) &&
           y0 < x0 + static_cast<uintptr_t>(x.length) * sizeof(float);
  };
  for (const Buffer* o = outputs.begin(); o != outputs.end(); ++o) {
    for (const Buffer& in : inputs) {
      if (overlap(*o, in)) throw_range(a.env(), a.op, o->name, std::string("must not overlap ") + in.name);
    }
    for (const Buffer* other = o + 1; other != outputs.end(); ++other) {
      if (overlap(*o, *other)) throw_range(a.env(), a.op, o->name, std::string("must not overlap ") + other->name);
    }
  }
}

/** seq_starts [num_seqs + 1]: 0 first, n_tokens last, non-decreasing. */
void check_seq_starts(const Args& a, const int32_t* s, int64_t num_seqs, int64_t n_tokens) {
  auto element = [](int64_t i) { return "seqStarts[" + std::to_string(i) + "]"; };
  if (s[0] != 0) throw_range(a.env(), a.op, "seqStarts[0]", "is " + std::to_string(s[0]) + ", expected 0");
  for (int64_t i = 1; i <= num_seqs; ++i) {
    if (s[i] < s[i - 1]) {
      throw_range(a.env(), a.op, element(i).c_str(),
                  "is " + std::to_string(s[i]) + ", less than " + element(i - 1) + " = " + std::to_string(s[i - 1]) +
                      " (must be non-decreasing)");
    }
  }
  if (s[num_seqs] != n_tokens) {
    throw_range(a.env(), a.op, element(num_seqs).c_str(),
                "is " + std::to_string(s[num_seqs]) + ", expected nTokens = " + std::to_string(n_tokens));
  }
}

/** The cache arrays plus numBlocks, blockSize, numKvHeads, headDim (dims at `dims`..dims+3). */
PagedKvCache cache_arg(const Args& a, size_t key, size_t value, size_t dims, int64_t num_kv_heads, int64_t head_dim) {
  PagedKvCache c{};
  c.num_blocks = a.dim(dims, "numBlocks", 0, kMaxIndex);
  c.block_size = a.dim(dims + 1, "blockSize", 1, kMaxIndex);
  c.num_kv_heads = num_kv_heads;
  c.head_dim = head_dim;
  const int64_t length = elements(a, "keyCache", {c.num_blocks, c.block_size, num_kv_heads, head_dim});
  if (c.num_blocks * c.block_size > kMaxIndex) {
    throw_range(a.env(), a.op, "numBlocks", "× blockSize exceeds 2^31 - 1 slots");
  }
  c.key = a.f32(key, "keyCache", length);
  c.value = a.f32(value, "valueCache", length);
  return c;
}

// cacheWrite(k, v, nTokens, slotMapping, keyCache, valueCache, numBlocks, blockSize, numKvHeads, headDim)
void CacheWrite(const Args& a) {
  const int64_t n = a.dim(2, "nTokens", 0, kMaxIndex);
  const int64_t num_kv_heads = a.dim(8, "numKvHeads", 1, kMaxHeads);
  const int64_t head_dim = a.dim(9, "headDim", 1, kMaxHeadDim);
  const PagedKvCache c = cache_arg(a, 4, 5, 6, num_kv_heads, head_dim);
  const int64_t kv_length = elements(a, "k", {n, num_kv_heads, head_dim});
  const float* k = a.f32(0, "k", kv_length);
  const float* v = a.f32(1, "v", kv_length);
  const int32_t* slots = a.i32(3, "slotMapping", n);
  check_indices(a, "slotMapping", slots, n, -1, c.num_blocks * c.block_size);
  const int64_t cache_length = c.num_blocks * c.block_size * num_kv_heads * head_dim;
  check_no_overlap(a, {{"keyCache", c.key, cache_length}, {"valueCache", c.value, cache_length}},
                   {{"k", k, kv_length}, {"v", v, kv_length}});
  cache_write(c, k, v, n, slots);
}

// pagedAttention(q, nRows, rowSeq, rowPos, blockTables, numSeqs, maxBlocksPerSeq,
//                keyCache, valueCache, numBlocks, blockSize, numHeads, numKvHeads, headDim, scale, out)
void PagedAttention(const Args& a) {
  const AttentionHeads h = heads_arg(a, 11);
  const PagedKvCache c = cache_arg(a, 7, 8, 9, h.num_kv_heads, h.head_dim);
  PagedRows rows{};
  rows.n_rows = a.dim(1, "nRows", 0, kMaxIndex);
  const int64_t num_seqs = a.dim(5, "numSeqs", 0, kMaxIndex);
  rows.max_blocks_per_seq = a.dim(6, "maxBlocksPerSeq", 0, kMaxIndex);
  const int64_t q_length = elements(a, "q", {rows.n_rows, h.num_heads, h.head_dim});
  const float* q = a.f32(0, "q", q_length);
  rows.row_seq = a.i32(2, "rowSeq", rows.n_rows);
  rows.row_pos = a.i32(3, "rowPos", rows.n_rows);
  rows.block_tables = a.i32(4, "blockTables", elements(a, "blockTables", {num_seqs, rows.max_blocks_per_seq}));
  float* out = a.f32(15, "out", q_length);
  check_indices(a, "rowSeq", rows.row_seq, rows.n_rows, 0, num_seqs);
  check_indices(a, "rowPos", rows.row_pos, rows.n_rows, 0,
                elements(a, "maxBlocksPerSeq", {rows.max_blocks_per_seq, c.block_size}));
  // Every block a row reads: logical blocks 0..rowPos/blockSize of its sequence.
  // Rows of one sequence usually come together, so each is checked once.
  int64_t last_seq = -1, checked = 0;
  for (int64_t i = 0; i < rows.n_rows; ++i) {
    const int64_t s = rows.row_seq[i];
    if (s != last_seq) {
      last_seq = s;
      checked = 0;
    }
    const int64_t used = rows.row_pos[i] / c.block_size + 1;
    for (int64_t b = checked; b < used; ++b) {
      const int32_t id = rows.block_tables[s * rows.max_blocks_per_seq + b];
      if (id < 0 || id >= c.num_blocks) {
        const std::string element = "blockTables[" + std::to_string(s) + "][" + std::to_string(b) + "]";
        throw_range(a.env(), a.op, element.c_str(),
                    "is " + std::to_string(id) + ", expected [0, " + std::to_string(c.num_blocks) +
                        ") (read by rowPos[" + std::to_string(i) + "] = " + std::to_string(rows.row_pos[i]) + ")");
      }
    }
    if (used > checked) checked = used;
  }
  const int64_t cache_length = c.num_blocks * c.block_size * h.num_kv_heads * h.head_dim;
  check_no_overlap(a, {{"out", out, q_length}},
                   {{"q", q, q_length}, {"keyCache", c.key, cache_length}, {"valueCache", c.value, cache_length}});
  paged_attention(h, rows, c, q, out);
}

/** The arrays of a packed batch: q [nTokens, numHeads, headDim] and k, v [nTokens, numKvHeads, headDim]. */
struct Packed {
  int64_t n_tokens, num_seqs, q_length, kv_length;
  const int32_t* seq_starts;
};

Packed packed_arg(const Args& a, size_t n_tokens, size_t seq_starts, size_t num_seqs, const AttentionHeads& h) {
  Packed p{};
  p.n_tokens = a.dim(n_tokens, "nTokens", 0, kMaxIndex);
  p.num_seqs = a.dim(num_seqs, "numSeqs", 0, kMaxIndex - 1);
  p.q_length = elements(a, "q", {p.n_tokens, h.num_heads, h.head_dim});
  p.kv_length = elements(a, "k", {p.n_tokens, h.num_kv_heads, h.head_dim});
  p.seq_starts = a.i32(seq_starts, "seqStarts", p.num_seqs + 1);
  check_seq_starts(a, p.seq_starts, p.num_seqs, p.n_tokens);
  return p;
}

// attentionForward(q, k, v, nTokens, seqStarts, numSeqs, numHeads, numKvHeads, headDim, scale, out, lse)
void AttentionForward(const Args& a) {
  const AttentionHeads h = heads_arg(a, 6);
  const Packed p = packed_arg(a, 3, 4, 5, h);
  const float* q = a.f32(0, "q", p.q_length);
  const float* k = a.f32(1, "k", p.kv_length);
  const float* v = a.f32(2, "v", p.kv_length);
  float* out = a.f32(10, "out", p.q_length);
  const int64_t lse_length = p.n_tokens * h.num_heads;
  float* lse = a.f32(11, "lse", lse_length);
  check_no_overlap(a, {{"out", out, p.q_length}, {"lse", lse, lse_length}},
                   {{"q", q, p.q_length}, {"k", k, p.kv_length}, {"v", v, p.kv_length}});
  attention_forward(h, p.n_tokens, p.seq_starts, p.num_seqs, q, k, v, out, lse);
}

// attentionBackward(q, k, v, out, lse, dOut, nTokens, seqStarts, numSeqs, numHeads, numKvHeads, headDim, scale,
//                   dq, dk, dv)
void AttentionBackward(const Args& a) {
  const AttentionHeads h = heads_arg(a, 9);
  const Packed p = packed_arg(a, 6, 7, 8, h);
  const int64_t lse_length = p.n_tokens * h.num_heads;
  const float* q = a.f32(0, "q", p.q_length);
  const float* k = a.f32(1, "k", p.kv_length);
  const float* v = a.f32(2, "v", p.kv_length);
  const float* out = a.f32(3, "out", p.q_length);
  const float* lse = a.f32(4, "lse", lse_length);
  const float* d_out = a.f32(5, "dOut", p.q_length);
  float* dq = a.f32(13, "dq", p.q_length);
  float* dk = a.f32(14, "dk", p.kv_length);
  float* dv = a.f32(15, "dv", p.kv_length);
  check_no_overlap(a, {{"dq", dq, p.q_length}, {"dk", dk, p.kv_length}, {"dv", dv, p.kv_length}},
                   {{"q", q, p.q_length},
                    {"k", k, p.kv_length},
                    {"v", v, p.kv_length},
                    {"out", out, p.q_length},
                    {"lse", lse, lse_length},
                    {"dOut", d_out, p.q_length}});
  attention_backward(h, p.n_tokens, p.seq_starts, p.num_seqs, q, k, v, out, lse, d_out, dq, dk, dv);
}

constexpr Op kOps[] = {
    {"cacheWrite", 10, CacheWrite},
    {"pagedAttention", 16, PagedAttention},
    {"attentionForward", 12, AttentionForward},
    {"attentionBackward", 16, AttentionBackward},
};

}  // namespace

void register_attention(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
