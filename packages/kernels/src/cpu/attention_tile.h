// Tiles of key positions for attention: the cursors that walk a sequence's K/V
// rows (paged through a block table, or packed), per-thread scratch, and the
// online-softmax attention of one query row's head group (attend_group), which
// the paged (serving) and the packed (training) forward share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention_math.h"
#include "thread_pool.h"

namespace ot {
namespace attn {

// Key positions (or, in the dk/dv pass, query rows) handled per tile: their scores
// sit in a small scratch and their K/V rows stay in L1 while every query head of
// the kv group reads them. A multiple of 8.
constexpr int kTile = 32;

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

inline Scratch& scratch(int64_t heads) {
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
inline void attend_group(const float* q, int64_t group, int64_t d, float scale, int64_t count, Cursor cursor,
                         const float* k, const float* v, float* out, float* lse) {
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

/** Task grain: many small chunks, so rows of unequal length balance across the pool. */
inline int64_t fine_grain(int64_t tasks) { return grain_for(tasks, 16); }

}  // namespace attn
}  // namespace ot
