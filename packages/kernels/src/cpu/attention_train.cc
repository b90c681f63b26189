// Training attention over packed sequences (concatenated along the token axis,
// delimited by seq_starts, causal within each): the forward keeps each row's
// log-sum-exp, the backward recomputes probabilities from it (FlashAttention-2).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention.h"
#include "attention_tile.h"
#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

using attn::accumulate;
using attn::attend_group;
using attn::dot8;
using attn::fine_grain;
using attn::gather_tile;
using attn::kTile;
using attn::PackedCursor;
using attn::pad_tile;
using attn::Scratch;
using attn::scratch;
using attn::softmax_grad;

/** The start of the sequence that holds token i (seq_starts is non-decreasing, from 0 to n_tokens). */
inline int64_t seq_index(const int32_t* seq_starts, int64_t num_seqs, int64_t i) {
  const int32_t* it = std::upper_bound(seq_starts, seq_starts + num_seqs + 1, static_cast<int32_t>(i));
  return (it - seq_starts) - 1;
}

}  // namespace

void attention_forward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                       const float* q, const float* k, const float* v, float* out, float* lse) {
  const int64_t kv = h.num_kv_heads, d = h.head_dim, group = h.num_heads / kv;
  const int64_t tasks = n_tokens * kv;
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / kv, g = task % kv;
      const int64_t start = seq_starts[seq_index(seq_starts, num_seqs, i)];
      const int64_t at = (i * h.num_heads + g * group) * d;
      attend_group(q + at, group, d, h.scale, i - start + 1, PackedCursor{(start * kv + g) * d, kv * d}, k, v,
                   out + at, lse + i * h.num_heads + g * group);
    }
  });
}

void attention_backward(const AttentionHeads& h, int64_t n_tokens, const int32_t* seq_starts, int64_t num_seqs,
                        const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* d_out, float* dq, float* dk, float* dv) {
  const int64_t heads = h.num_heads, kv = h.num_kv_heads, d = h.head_dim, group = heads / kv;
  const float scale = h.scale;

  // delta [n_tokens, heads] = rowsum(dOut ⊙ out), the softmax-gradient correction.
  thread_local std::vector<float> delta_buffer;
  const size_t rows = static_cast<size_t>(n_tokens * heads);
  if (delta_buffer.size() < rows) delta_buffer.resize(rows);
  float* delta = delta_buffer.data();
  parallel_for(n_tokens * heads, grain_for(n_tokens * heads), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) delta[r] = dot(d_out + r * d, out + r * d, d);
  });

  // Two race-free passes, each parallel over (token, kv head). Pass 1 owns dq rows:
  //   dq_i = Σ_{j ≤ i} ds_ij · k_j
  const int64_t tasks = n_tokens * kv;
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    Scratch& sc = scratch(group);
    float* s = sc.a.data();        // [group, kTile]: q·k, then p
    float* dp = sc.b.data();       // [group, kTile]: dOut·v, then ds
    float* lse_t = sc.c.data();    // [group, kTile]: the row's lse, repeated
    float* delta_t = sc.d.data();  // [group, kTile]: the row's delta, repeated
    const float* kp[kTile];
    const float* vp[kTile];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / kv, g = task % kv;
      const int64_t start = seq_starts[seq_index(seq_starts, num_seqs, i)];
      const int64_t row = i * heads + g * group;  // first query head of the group
      std::fill(dq + row * d, dq + (row + group) * d, 0.0f);
      for (int64_t hh = 0; hh < group; ++hh) {
        std::fill(lse_t + hh * kTile, lse_t + (hh + 1) * kTile, lse[row + hh]);
        std::fill(delta_t + hh * kTile, delta_t + (hh + 1) * kTile, delta[row + hh]);
      }
      PackedCursor cursor{(start * kv + g) * d, kv * d};
      const int64_t count = i - start + 1;
      for (int64_t first = 0; first < count; first += kTile) {
        const int n = gather_tile(cursor, k, v, count - first, kp, vp);
        const int padded = pad_tile(kp, n);
        pad_tile(vp, n);
        // Phases over the group's heads, as in attend_group.
        for (int64_t hh = 0; hh < group; ++hh) {
          for (int t = 0; t < padded; t += 8) {
            dot8(q + (row + hh) * d, kp + t, d, s + hh * kTile + t);
            dot8(d_out + (row + hh) * d, vp + t, d, dp + hh * kTile + t);
          }
        }
        for (int64_t hh = 0; hh < group; ++hh) {
          const int64_t o = hh * kTile;
          softmax_grad(s + o, dp + o, lse_t + o, delta_t + o, padded, scale);
        }
        for (int64_t hh = 0; hh < group; ++hh) accumulate(dp + hh * kTile, kp, n, d, 1.0f, dq + (row + hh) * d);
      }
    }
  });

  // Pass 2 owns dk and dv rows of key j, summed over the query rows i ≥ j of its
  // sequence and the query heads of its kv group:
  //   dk_j = Σ ds_ij · q_i,   dv_j = Σ p_ij · dOut_i
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    Scratch& sc = scratch(1);
    float* s = sc.a.data();
    float* dp = sc.b.data();
    float* lse_t = sc.c.data();
    float* delta_t = sc.d.data();
    const float* qp[kTile];
    const float* gp[kTile];  // dOut rows
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t j = task / kv, g = task % kv;
      const int64_t end = seq_starts[seq_index(seq_starts, num_seqs, j) + 1];
      const int64_t at = (j * kv + g) * d;
      float* dkj = dk + at;
      float* dvj = dv + at;
      std::fill(dkj, dkj + d, 0.0f);
      std::fill(dvj, dvj + d, 0.0f);
      const int64_t count = (end - j) * group;  // (query row, head) pairs
      int64_t i = j, hh = 0;
      for (int64_t first = 0; first < count; first += kTile) {
        const int n = static_cast<int>(std::min<int64_t>(kTile, count - first));
        for (int t = 0; t < n; ++t) {
          const int64_t r = i * heads + g * group + hh;
          qp[t] = q + r * d;
          gp[t] = d_out + r * d;
          lse_t[t] = lse[r];
          delta_t[t] = delta[r];
          if (++hh == group) {
            hh = 0;
            ++i;
          }
        }
        const int padded = pad_tile(qp, n);
        pad_tile(gp, n);
        for (int t = n; t < padded; ++t) lse_t[t] = delta_t[t] = 0.0f;
        for (int t = 0; t < padded; t += 8) {
          dot8(k + at, qp + t, d, s + t);
          dot8(v + at, gp + t, d, dp + t);
        }
        softmax_grad(s, dp, lse_t, delta_t, padded, scale);
        accumulate(s, gp, n, d, 1.0f, dvj);
        accumulate(dp, qp, n, d, 1.0f, dkj);
      }
    }
  });
}

}  // namespace ot
