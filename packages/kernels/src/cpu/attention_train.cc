// Training attention over packed sequences (concatenated along the token axis,
// delimited by seq_starts, causal within each): the forward keeps each row's
// log-sum-exp, the backward recomputes probabilities from it (FlashAttention-2),
// each score once, in blocks (attention_block.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention.h"
#include "attention_block.h"
#include "attention_tile.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

using attn::attend_rows;
using attn::fine_grain;
using attn::PackedCursor;
using attn::RowBlock;

/** The start of the sequence that holds token i (seq_starts is non-decreasing, from 0 to n_tokens). */
inline int64_t seq_index(const int32_t* seq_starts, int64_t num_seqs, int64_t i) {
  const int32_t* it = std::upper_bound(seq_starts, seq_starts + num_seqs + 1, static_cast<int32_t>(i));
  return (it - seq_starts) - 1;
}

}  // namespace

void attention_forward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                       const float* q, const float* k, const float* v, float* out, float* lse) {
  const int64_t kv = h.num_kv_heads, d = h.head_dim, group = h.num_heads / kv;
  const int64_t rows = attn::rows_per_block(group);
  const int64_t tasks = (n_tokens + rows - 1) / rows * kv;  // (block of rows, kv head)
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t g = task % kv, first = task / kv * rows;
      // The block's rows up to its sequence's end; the next sequence's go alone.
      for (int64_t i = first; i < std::min(first + rows, n_tokens);) {
        const int64_t s = seq_index(seq_starts, num_seqs, i), start = seq_starts[s];
        const int64_t end = std::min({first + rows, n_tokens, static_cast<int64_t>(seq_starts[s + 1])});
        const int64_t at = (i * h.num_heads + g * group) * d;
        const RowBlock block{q + at, out + at, lse + i * h.num_heads + g * group, end - i, h.num_heads * d,
                             h.num_heads, i - start + 1};
        attend_rows(block, group, d, h.scale, PackedCursor{(start * kv + g) * d, kv * d}, k, v);
        i = end;
      }
    }
  });
}

namespace {

// Keys per block of the backward: their K and V rows (and Kᵀ, Vᵀ) are packed
// once, and their dk and dv accumulate in a small buffer while every later query
// row of the sequence passes. A multiple of 8.
constexpr int64_t kKeyBlock = 32;
// Query rows ((token, head) pairs) per step against a key block: their scores
// and gradients [kRowBlock × kKeyBlock] stay in L1.
constexpr int64_t kRowBlock = 48;

/** Per-thread buffers of one (sequence, kv head) task, grown once. */
struct BackwardScratch {
  std::vector<float> q, d_out, dq;      // [rows, dp]: the task's query rows, packed and 8-padded
  std::vector<float> lse, delta;        // [rows]
  std::vector<float> kt, vt;            // [dp, kKeyBlock]: the key block transposed
  std::vector<float> kb, dk, dv;        // [kKeyBlock, dp]
  std::vector<float> s, dp;             // [kRowBlock, kKeyBlock]: scores → p, dOut·v → ds

  void reserve(int64_t rows, int64_t dp_) {
    const auto grow = [](std::vector<float>& v, int64_t n) {
      if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
    };
    grow(q, rows * dp_);
    grow(d_out, rows * dp_);
    grow(dq, rows * dp_);
    grow(lse, rows);
    grow(delta, rows);
    for (auto* v : {&kt, &vt, &kb, &dk, &dv}) grow(*v, kKeyBlock * dp_);
    grow(s, kRowBlock * kKeyBlock);
    grow(dp, kRowBlock * kKeyBlock);
  }
};

struct BackwardArgs {
  const AttentionHeads& h;
  const float *q, *k, *v, *out, *lse, *d_out;
  float *dq, *dk, *dv;
};

/**
 * dq, dk and dv of one sequence's kv head g (tokens [start, end)), in one pass
 * over its causal triangle: per key block, every query row at or after it
 * computes its scores and dOut·v once and adds to dq, dk and dv (FlashAttention-2's
 * five products, none twice). Its rows are the (token, query head of the group)
 * pairs, token-major.
 */
void backward_task(const BackwardArgs& a, int64_t start, int64_t end, int64_t g) {
  using attn::block_product;
  using attn::BlockProduct;
  const int64_t heads = a.h.num_heads, kv = a.h.num_kv_heads, d = a.h.head_dim, group = heads / kv;
  const int64_t dp = (d + 7) / 8 * 8;
  const int64_t len = end - start, rows = len * group;
  thread_local BackwardScratch sc;
  sc.reserve(rows, dp);
  // Pack the rows (zero-padded to dp) with their lse and delta = rowsum(dOut ⊙ out).
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = (start + r / group) * heads + g * group + r % group;
    const float* qr = a.q + row * d;
    const float* gr = a.d_out + row * d;
    float* q_dst = sc.q.data() + r * dp;
    float* g_dst = sc.d_out.data() + r * dp;
    std::copy(qr, qr + d, q_dst);
    std::copy(gr, gr + d, g_dst);
    std::fill(q_dst + d, q_dst + dp, 0.0f);
    std::fill(g_dst + d, g_dst + dp, 0.0f);
    sc.lse[r] = a.lse[row];
    sc.delta[r] = dot(gr, a.out + row * d, d);
  }
  std::fill(sc.dq.data(), sc.dq.data() + rows * dp, 0.0f);
  const float scale = a.h.scale;
  for (int64_t j0 = 0; j0 < len; j0 += kKeyBlock) {
    const int64_t keys = std::min(kKeyBlock, len - j0);
    // The key block: K rows (for dq) and Kᵀ, Vᵀ (for the scores), zero-padded.
    std::fill(sc.kt.data(), sc.kt.data() + dp * kKeyBlock, 0.0f);
    std::fill(sc.vt.data(), sc.vt.data() + dp * kKeyBlock, 0.0f);
    std::fill(sc.kb.data(), sc.kb.data() + kKeyBlock * dp, 0.0f);
    std::fill(sc.dk.data(), sc.dk.data() + kKeyBlock * dp, 0.0f);
    std::fill(sc.dv.data(), sc.dv.data() + kKeyBlock * dp, 0.0f);
    for (int64_t c = 0; c < keys; ++c) {
      const float* kr = a.k + ((start + j0 + c) * kv + g) * d;
      const float* vr = a.v + ((start + j0 + c) * kv + g) * d;
      std::copy(kr, kr + d, sc.kb.data() + c * dp);
      for (int64_t p = 0; p < d; ++p) {
        sc.kt[p * kKeyBlock + c] = kr[p];
        sc.vt[p * kKeyBlock + c] = vr[p];
      }
    }
    // Query rows of tokens j0 … len-1, a row block at a time.
    for (int64_t r0 = j0 * group; r0 < rows; r0 += kRowBlock) {
      const int64_t n = std::min(kRowBlock, rows - r0);
      float* s = sc.s.data();
      float* ds = sc.dp.data();
      // s = q·kᵀ and dp = dOut·vᵀ: [n, kKeyBlock] each.
      block_product(BlockProduct{n, d, kKeyBlock, sc.q.data() + r0 * dp, dp, 1, sc.kt.data(), kKeyBlock, s,
                                 kKeyBlock, true});
      block_product(BlockProduct{n, d, kKeyBlock, sc.d_out.data() + r0 * dp, dp, 1, sc.vt.data(), kKeyBlock, ds,
                                 kKeyBlock, true});
      for (int64_t r = 0; r < n; ++r) {
        const int64_t token = (r0 + r) / group;  // within the sequence
        const int limit = static_cast<int>(std::min(keys, token - j0 + 1));
        attn::block_softmax_grad(s + r * kKeyBlock, ds + r * kKeyBlock, kKeyBlock, limit, sc.lse[r0 + r],
                                 sc.delta[r0 + r], scale);
      }
      // dv[c] += Σ_r p[r, c] · dOut_r,  dk[c] += Σ_r ds[r, c] · q_r,  dq_r += Σ_c ds[r, c] · k_c.
      block_product(BlockProduct{kKeyBlock, n, dp, s, 1, kKeyBlock, sc.d_out.data() + r0 * dp, dp, sc.dv.data(),
                                 dp, false});
      block_product(BlockProduct{kKeyBlock, n, dp, ds, 1, kKeyBlock, sc.q.data() + r0 * dp, dp, sc.dk.data(), dp,
                                 false});
      block_product(BlockProduct{n, kKeyBlock, dp, ds, kKeyBlock, 1, sc.kb.data(), dp, sc.dq.data() + r0 * dp, dp,
                                 false});
    }
    for (int64_t c = 0; c < keys; ++c) {
      const int64_t at = ((start + j0 + c) * kv + g) * d;
      std::copy(sc.dk.data() + c * dp, sc.dk.data() + c * dp + d, a.dk + at);
      std::copy(sc.dv.data() + c * dp, sc.dv.data() + c * dp + d, a.dv + at);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = (start + r / group) * heads + g * group + r % group;
    std::copy(sc.dq.data() + r * dp, sc.dq.data() + r * dp + d, a.dq + row * d);
  }
}

}  // namespace

void attention_backward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                        const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* d_out, float* dq, float* dk, float* dv) {
  (void)n_tokens;
  const int64_t kv = h.num_kv_heads;
  // One task per (sequence, kv head), longest sequences first so the pool's last
  // tasks are short. Each task owns its rows of dq, dk and dv and sums them in a
  // fixed order: the result does not depend on the threads.
  std::vector<int64_t> order(static_cast<size_t>(num_seqs));
  for (int64_t s = 0; s < num_seqs; ++s) order[static_cast<size_t>(s)] = s;
  const auto len = [&](int64_t s) { return seq_starts[s + 1] - seq_starts[s]; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return len(x) > len(y); });
  const BackwardArgs args{h, q, k, v, out, lse, d_out, dq, dk, dv};
  parallel_for(num_seqs * kv, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t s = order[static_cast<size_t>(t / kv)];
      if (len(s) > 0) backward_task(args, seq_starts[s], seq_starts[s + 1], t % kv);
    }
  });
}

}  // namespace ot
