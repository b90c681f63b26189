// Row-wise and elementwise ops of the Llama family, fp32, row-major:
//   RMSNorm      y = x · rsqrt(mean(x²) + eps) · w               (norm.cc)
//   RoPE         Hugging Face rotate_half pairs (k, k + rot/2)     (rope.cc)
//   SwiGLU       y = silu(gate) · up                               (activation.cc)
//   Embedding    gather rows, scatter-add rows back                (embedding.cc)
// plus the 8-wide exp / sigmoid that activation.cc and softmax.cc share.
#pragma once

#include <cstdint>

#include "simd.h"

namespace ot {

// ---- RMSNorm -------------------------------------------------------------

/**
 * out[n, d] = x · r_i · w with r_i = 1 / sqrt(mean_j x[i, j]² + eps).
 * inv_rms [n] receives r_i when not null (the backward can reuse it).
 */
void rmsnorm_forward(int64_t n, int64_t d, const float* x, const float* w, float eps, float* out, float* inv_rms);

/**
 * Gradients of L = Σ d_out ⊙ rmsnorm(x):
 *   dx[i, k] (= or +=, per `accumulate`) r·w_k·g_k − (r³/d)·x_k·Σ_j g_j·w_j·x_j
 *   dw[k]    += Σ_i g[i, k]·x[i, k]·r_i          (skipped when dw is null)
 * inv_rms may be null: r_i is then recomputed from x and eps. dx must not alias
 * d_out or x (dw is computed from them after dx is written).
 */
void rmsnorm_backward(int64_t n, int64_t d, const float* x, const float* w, const float* inv_rms, float eps,
                      const float* d_out, float* dx, bool accumulate, float* dw);

// ---- RoPE ----------------------------------------------------------------

/**
 * Rotates x [n, heads, head_dim] in place. Pair (k, k + half) of every head, with
 * half = rot_half ≤ head_dim / 2, turns by θ = positions[i] · inv_freq[k]:
 *   a' = a·c − b·s,  b' = b·c + a·s,  c = scale·cos θ, s = scale·sin θ.
 * Dimensions from 2·rot_half on pass through (partial rotary). `inverse` turns
 * by −θ: the transpose of the forward map, i.e. its backward.
 */
void rope_apply(int64_t n, int64_t heads, int64_t head_dim, float* x, const int32_t* positions, const float* inv_freq,
                int64_t rot_half, float scale, bool inverse);

// ---- SwiGLU --------------------------------------------------------------

/** out[i] = silu(gate[i]) · up[i] over `count` elements. */
void swiglu_forward(int64_t count, const float* gate, const float* up, float* out);

/**
 * d_gate[i] = d_out·up·σ(g)·(1 + g·(1 − σ(g))),  d_up[i] = d_out·silu(g)
 * (both overwritten).
 */
void swiglu_backward(int64_t count, const float* d_out, const float* gate, const float* up, float* d_gate,
                     float* d_up);

// ---- Embedding -----------------------------------------------------------

/** out[i, :] = table[ids[i], :] for i < n (ids already range-checked). */
void embedding_forward(int64_t n, int64_t d, const int32_t* ids, const float* table, float* out);

/**
 * d_table[ids[i], :] += d_out[i, :]. Threads own column slices, so repeated ids
 * never race, and every row is added in order i = 0, 1, … (deterministic).
 */
void embedding_backward(int64_t n, int64_t d, const int32_t* ids, const float* d_out, float* d_table);

// ---- Vector math shared with the losses ------------------------------------

#ifdef OT_AVX2
/**
 * exp of 8 floats (Cephes-style range reduction + degree-5 polynomial, ≤ 2 ulp on
 * [-87, 88]). Inputs are clamped to that range: very negative inputs give
 * 1.6e-38 instead of 0, large ones 1.7e38 instead of +inf. NaN stays NaN.
 */
inline __m256 exp256(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.0f);
  const __m256 lo = _mm256_set1_ps(-87.0f);
  const __m256 nan_mask = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  // x = k·ln2 + r, |r| ≤ ln2 / 2, with ln2 split in two for an exact k·ln2.
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // · 2^k through the exponent bits (k ∈ [-126, 127] after the clamp).
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  return _mm256_or_ps(result, nan_mask);  // NaN in, NaN out
}

/** σ(x) = 1 / (1 + e^−x) of 8 floats. */
inline __m256 sigmoid256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
#endif

}  // namespace ot
