#include "attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "simd.h"
#include "thread_pool.h"

namespace ot {
namespace {

// Key positions (or, in the dk/dv pass, query rows) handled per tile: their scores
// sit in a small scratch and their K/V rows stay in L1 while every query head of
// the kv group reads them. A multiple of 8.
constexpr int kTile = 32;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#ifdef OT_AVX2
/** All-ones in the first n (0..8) lanes. */
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/** e^x per lane (Cephes polynomial, ~1 ulp); 0 below -87.3, so e^-inf is exactly 0. */
inline __m256 exp8(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n)));
}
#endif

/** out[j] = x · ys[j] over d elements, for j in 0..8. */
inline void dot8(const float* x, const float* const* ys, int64_t d, float* out) {
#ifdef OT_AVX2
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(ys[j] + i), xv, acc[j]);
  }
  if (i < d) {
    const __m256i mask = lane_mask(d - i);
    const __m256 xv = _mm256_maskload_ps(x + i, mask);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(_mm256_maskload_ps(ys[j] + i, mask), xv, acc[j]);
  }
  const __m256 t0123 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
  const __m256 t4567 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(t0123, t4567, 0x20),
                                      _mm256_permute2f128_ps(t0123, t4567, 0x31)));
#else
  for (int j = 0; j < 8; ++j) out[j] = dot(x, ys[j], d);
#endif
}

/** acc[0..d) = corr · acc + Σ_{t<n} w[t] · rows[t][0..d); the accumulator stays in registers. */
inline void accumulate(const float* w, const float* const* rows, int n, int64_t d, float corr, float* acc) {
#ifdef OT_AVX2
  const __m256 c = _mm256_set1_ps(corr);
  int64_t i = 0;
  // 64 columns at a time: eight independent FMA chains hide the FMA latency.
  for (; i + 64 <= d; i += 64) {
    __m256 a[8];
    for (int u = 0; u < 8; ++u) a[u] = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 8 * u));
    for (int t = 0; t < n; ++t) {
      const __m256 wt = _mm256_broadcast_ss(w + t);
      const float* r = rows[t] + i;
      for (int u = 0; u < 8; ++u) a[u] = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 8 * u), a[u]);
    }
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(acc + i + 8 * u, a[u]);
  }
  for (; i + 32 <= d; i += 32) {
    __m256 a0 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i));
    __m256 a1 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 8));
    __m256 a2 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 16));
    __m256 a3 = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i + 24));
    for (int t = 0; t < n; ++t) {
      const __m256 wt = _mm256_broadcast_ss(w + t);
      const float* r = rows[t] + i;
      a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r), a0);
      a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 8), a1);
      a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 16), a2);
      a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(r + 24), a3);
    }
    _mm256_storeu_ps(acc + i, a0);
    _mm256_storeu_ps(acc + i + 8, a1);
    _mm256_storeu_ps(acc + i + 16, a2);
    _mm256_storeu_ps(acc + i + 24, a3);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 a = _mm256_mul_ps(c, _mm256_loadu_ps(acc + i));
    for (int t = 0; t < n; ++t) a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_loadu_ps(rows[t] + i), a);
    _mm256_storeu_ps(acc + i, a);
  }
  if (i < d) {
    const __m256i mask = lane_mask(d - i);
    __m256 a = _mm256_mul_ps(c, _mm256_maskload_ps(acc + i, mask));
    for (int t = 0; t < n; ++t) {
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_maskload_ps(rows[t] + i, mask), a);
    }
    _mm256_maskstore_ps(acc + i, mask, a);
  }
#else
  for (int64_t i = 0; i < d; ++i) acc[i] *= corr;
  for (int t = 0; t < n; ++t) axpy(w[t], rows[t], acc, d);
#endif
}

/** s[0..n) *= scale and s[n..padded) = -inf; returns max(s[0..n)). */
inline float scale_scores(float* s, int n, int padded, float scale) {
#ifdef OT_AVX2
  const __m256 sc = _mm256_set1_ps(scale), neg_inf = _mm256_set1_ps(kNegInf);
  __m256 mx = neg_inf;
  for (int t = 0; t < padded; t += 8) {
    __m256 x = _mm256_mul_ps(sc, _mm256_loadu_ps(s + t));
    if (t + 8 > n) x = _mm256_blendv_ps(neg_inf, x, _mm256_castsi256_ps(lane_mask(n - t)));
    _mm256_storeu_ps(s + t, x);
    mx = _mm256_max_ps(mx, x);
  }
  __m128 r = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  r = _mm_max_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
#else
  float max = kNegInf;
  for (int t = 0; t < n; ++t) {
    s[t] *= scale;
    max = std::max(max, s[t]);
  }
  for (int t = n; t < padded; ++t) s[t] = kNegInf;
  return max;
#endif
}

/** s[t] = e^(s[t] - shift) for t < padded (a multiple of 8); returns the sum. */
inline float exp_shifted(float* s, int padded, float shift) {
#ifdef OT_AVX2
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  for (int t = 0; t < padded; t += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + t), sh));
    _mm256_storeu_ps(s + t, e);
    sum = _mm256_add_ps(sum, e);
  }
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
#else
  float sum = 0.0f;
  for (int t = 0; t < padded; ++t) {
    s[t] = std::exp(s[t] - shift);
    sum += s[t];
  }
  return sum;
#endif
}

/**
 * Softmax gradient of one tile, FlashAttention-2 style, for t < padded:
 *   p[t] = e^(scale·s[t] - lse[t]),  ds[t] = scale · p[t] · (dp[t] - delta[t])
 * where s = q·k, dp = dOut·v and delta = rowsum(dOut ⊙ out). p overwrites s and ds
 * overwrites dp; ds already carries the score scale for dq and dk.
 */
inline void softmax_grad(float* s, float* dp, const float* lse, const float* delta, int padded, float scale) {
#ifdef OT_AVX2
  const __m256 sc = _mm256_set1_ps(scale);
  for (int t = 0; t < padded; t += 8) {
    const __m256 p = exp8(_mm256_fmsub_ps(sc, _mm256_loadu_ps(s + t), _mm256_loadu_ps(lse + t)));
    _mm256_storeu_ps(s + t, p);
    const __m256 dp_minus_delta = _mm256_sub_ps(_mm256_loadu_ps(dp + t), _mm256_loadu_ps(delta + t));
    _mm256_storeu_ps(dp + t, _mm256_mul_ps(_mm256_mul_ps(sc, p), dp_minus_delta));
  }
#else
  for (int t = 0; t < padded; ++t) {
    s[t] = std::exp(scale * s[t] - lse[t]);
    dp[t] = scale * s[t] * (dp[t] - delta[t]);
  }
#endif
}

/** Pads a tile's pointer list to a multiple of 8 with copies of its first entry. */
inline int pad_tile(const float** ptrs, int n) {
  const int padded = (n + 7) & ~7;
  for (int t = n; t < padded; ++t) ptrs[t] = ptrs[0];
  return padded;
}

/** The next min(kTile, remaining) positions of the cursor as K and V row pointers; returns the count. */
template <typename Cursor>
inline int gather_tile(Cursor& cursor, const float* k, const float* v, int64_t remaining, const float** kp,
                       const float** vp) {
  const int n = static_cast<int>(std::clamp<int64_t>(remaining, 0, kTile));
  for (int t = 0; t < n; ++t) {
    const int64_t at = cursor.next();
    kp[t] = k + at;
    vp[t] = v + at;
  }
  return n;
}

/** Positions 0, 1, 2, … of one sequence's kv head in the paged cache, through its block table. */
struct PagedCursor {
  const int32_t* table;
  int64_t block_size, row_stride, block_stride, head_offset;
  int64_t block = 0, offset = 0;

  int64_t next() {
    const int64_t at = table[block] * block_stride + offset * row_stride + head_offset;
    if (++offset == block_size) {
      offset = 0;
      ++block;
    }
    return at;
  }
};

/** Positions of one packed (contiguous) sequence's kv head. */
struct PackedCursor {
  int64_t at, stride;

  int64_t next() {
    const int64_t here = at;
    at += stride;
    return here;
  }
};

/** Per-thread scratch that grows once: tile scores and the running softmax state. */
struct Scratch {
  std::vector<float> a, b, c, d;

  void reserve(int64_t heads) {
    const size_t need = static_cast<size_t>(heads) * kTile;
    if (a.size() < need) {
      a.resize(need);
      b.resize(need);
      c.resize(need);
      d.resize(need);
    }
  }
};

Scratch& scratch(int64_t heads) {
  thread_local Scratch s;
  s.reserve(heads);
  return s;
}

/**
 * Online-softmax attention of the `group` query heads q [group, d] of one row over
 * `count` key positions produced by `cursor` (offsets into k and v). Writes
 * out [group, d] and, when lse is given, lse [group].
 */
template <typename Cursor>
void attend_group(const float* q, int64_t group, int64_t d, float scale, int64_t count, Cursor cursor, const float* k,
                  const float* v, float* out, float* lse) {
  Scratch& sc = scratch(group);
  float* scores = sc.a.data();  // [group, kTile]
  float* m = sc.b.data();       // [group]: running max of the scaled scores
  float* l = sc.c.data();       // [group]: running sum of e^(score - m)
  float* corr = sc.d.data();    // [group]: e^(old m - new m), this tile's rescale of out and l
  std::fill(out, out + group * d, 0.0f);
  std::fill(m, m + group, kNegInf);
  std::fill(l, l + group, 0.0f);
  const float* kp[kTile];
  const float* vp[kTile];
  for (int64_t t0 = 0; t0 < count; t0 += kTile) {
    const int n = gather_tile(cursor, k, v, count - t0, kp, vp);
    const int padded = pad_tile(kp, n);
    pad_tile(vp, n);
    // Three phases over all heads of the group, so no head waits on its own
    // scores → softmax → accumulate chain: the heads' work overlaps instead.
    for (int64_t h = 0; h < group; ++h) {
      for (int t = 0; t < padded; t += 8) dot8(q + h * d, kp + t, d, scores + h * kTile + t);
    }
    for (int64_t h = 0; h < group; ++h) {
      float* s = scores + h * kTile;
      const float m_new = std::max(m[h], scale_scores(s, n, padded, scale));
      corr[h] = m_new == m[h] ? 1.0f : std::exp(m[h] - m_new);  // 0 on the first tile
      l[h] = l[h] * corr[h] + exp_shifted(s, padded, m_new);
      m[h] = m_new;
    }
    for (int64_t h = 0; h < group; ++h) accumulate(scores + h * kTile, vp, n, d, corr[h], out + h * d);
  }
  for (int64_t h = 0; h < group; ++h) {
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    for (int64_t i = 0; i < d; ++i) out[h * d + i] *= inv;
    if (lse) lse[h] = m[h] + std::log(l[h]);
  }
}

/** The start of the sequence that holds token i (seq_starts is non-decreasing, from 0 to n_tokens). */
inline int64_t seq_index(const int32_t* seq_starts, int64_t num_seqs, int64_t i) {
  const int32_t* it = std::upper_bound(seq_starts, seq_starts + num_seqs + 1, static_cast<int32_t>(i));
  return (it - seq_starts) - 1;
}

/** Task grain: many small chunks, so rows of unequal length balance across the pool. */
inline int64_t fine_grain(int64_t tasks) { return grain_for(tasks, 16); }

}  // namespace

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

void paged_attention(const AttentionHeads& h, const PagedRows& rows, const PagedKvCache& c, const float* q,
                     float* out) {
  const int64_t kv = h.num_kv_heads, d = h.head_dim, group = h.num_heads / kv;
  const int64_t tasks = rows.n_rows * kv;  // (row, kv head): the group's query heads share each K/V tile
  parallel_for(tasks, fine_grain(tasks), [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / kv, g = task % kv;
      const PagedCursor cursor{rows.block_tables + rows.row_seq[i] * rows.max_blocks_per_seq, c.block_size, kv * d,
                               c.block_size * kv * d, g * d};
      const int64_t at = (i * h.num_heads + g * group) * d;
      attend_group(q + at, group, d, h.scale, rows.row_pos[i] + 1, cursor, c.key, c.value, out + at, nullptr);
    }
  });
}

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
