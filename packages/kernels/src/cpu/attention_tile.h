// Tiles of key positions for attention: the cursors that walk a sequence's K/V
// rows (paged through a block table, or packed), per-thread scratch, and the
// online-softmax attention of a block of query rows (attend_rows), which
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
  std::vector<float> a;       // [heads, kTile]
  std::vector<float> b, c;    // [heads]
  std::vector<HeadSum> sums;  // [heads]

  void reserve(int64_t heads) {
    const size_t n = static_cast<size_t>(heads);
    if (b.size() < n) {
      a.resize(n * kTile);
      b.resize(n);
      c.resize(n);
      sums.resize(n);
    }
  }
};

inline Scratch& scratch(int64_t heads) {
  thread_local Scratch s;
  s.reserve(heads);
  return s;
}

/**
 * Consecutive query rows of one sequence and the query heads of one kv head:
 * row r attends to the first `first_count + r` positions. q and out point at the
 * first row's first head of the group (rows `row_stride` apart, heads d apart);
 * lse, when given, at its log-sum-exp (rows `lse_stride` apart).
 */
struct RowBlock {
  const float* q;
  float* out;
  float* lse;
  int64_t rows, row_stride, lse_stride, first_count;
};

/**
 * One head's online softmax over a tile's scores s[0..n) (padded to 8): turns
 * them into weights e^(score - m), updates its running max m and sum l, and
 * returns the factor that rescales what it summed before (0 on the first tile).
 */
inline float online_softmax(float* s, int n, float scale, float& m, float& l) {
  const int padded = (n + 7) & ~7;
  const float m_new = std::max(m, scale_scores(s, n, padded, scale));
  const float corr = m_new == m ? 1.0f : std::exp(m - m_new);
  l = l * corr + exp_shifted(s, padded, m_new);
  m = m_new;
  return corr;
}

/**
 * Online-softmax attention of a row block's `group` heads per row over the
 * positions `cursor` produces (offsets into k and v). Each K/V tile is read once
 * for every row of the block, and each (row, head) sums in the order it would
 * alone, so a row's result does not depend on the block it came in.
 */
template <typename Cursor>
inline void attend_rows(const RowBlock& b, int64_t group, int64_t d, float scale, Cursor cursor, const float* k,
                        const float* v) {
  const int64_t heads = b.rows * group;  // head j: row j / group, query head j % group
  const auto at = [&](int64_t j) { return (j / group) * b.row_stride + (j % group) * d; };
  Scratch& sc = scratch(heads);
  float* scores = sc.a.data();  // [heads, kTile]
  float* m = sc.b.data();       // [heads]: running max of the scaled scores
  float* l = sc.c.data();       // [heads]: running sum of e^(score - m)
  for (int64_t r = 0; r < b.rows; ++r) std::fill_n(b.out + r * b.row_stride, group * d, 0.0f);
  std::fill(m, m + heads, kNegInf);
  std::fill(l, l + heads, 0.0f);
  const float* kp[kTile];
  const float* vp[kTile];
  const int64_t last = b.first_count + b.rows - 1;  // the last row's count, the largest
  for (int64_t t0 = 0; t0 < last; t0 += kTile) {
    const int n = gather_tile(cursor, k, v, last - t0, kp, vp);
    pad_tile(kp, n);
    pad_tile(vp, n);
    // Rows whose positions end before this tile sit it out. Scores of all heads,
    // then their softmax, then their sums, so no head waits on its own chain.
    const int64_t first = std::max<int64_t>(0, t0 - b.first_count + 1) * group;
    HeadSum* sums = sc.sums.data();  // [heads - first]
    for (int64_t j = first; j < heads; ++j) {
      const int nj = static_cast<int>(std::min<int64_t>(kTile, b.first_count + j / group - t0));
      sums[j - first] = {scores + j * kTile, nj, 0.0f, b.out + at(j)};
      for (int t = 0; t < nj; t += 8) dot8(b.q + at(j), kp + t, d, scores + j * kTile + t);
    }
    for (int64_t j = first; j < heads; ++j) {
      HeadSum& sum = sums[j - first];
      sum.corr = online_softmax(scores + j * kTile, sum.n, scale, m[j], l[j]);
    }
    accumulate_heads(sums, heads - first, vp, d);
  }
  for (int64_t j = 0; j < heads; ++j) {
    const float inv = l[j] > 0.0f ? 1.0f / l[j] : 0.0f;
    for (int64_t i = 0; i < d; ++i) b.out[at(j) + i] *= inv;
    if (b.lse) b.lse[(j / group) * b.lse_stride + j % group] = m[j] + std::log(l[j]);
  }
}

/** Query rows per block: enough that a K/V tile, read once from L2, serves ~16 heads. */
inline int64_t rows_per_block(int64_t group) { return std::clamp<int64_t>(16 / group, 1, 8); }

/** Task grain: many small chunks, so rows of unequal length balance across the pool. */
inline int64_t fine_grain(int64_t tasks) { return grain_for(tasks, 16); }

}  // namespace attn
}  // namespace ot
