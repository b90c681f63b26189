// Row-wise and elementwise ops of the Llama family, fp32, row-major:
//   RMSNorm      y = x · rsqrt(mean(x²) + eps) · w               (norm.cc)
//   RoPE         Hugging Face rotate_half pairs (k, k + rot/2)     (rope.cc)
//   SwiGLU       y = silu(gate) · up                               (activation.cc)
//   Embedding    gather rows, scatter-add rows back                (embedding.cc)
//   Adds         x += y, and each row += a bias                    (add.cc)
// SwiGLU and the losses take their 8-wide exp and sigmoid from simd.h.
#pragma once

#include <cstdint>

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

// ---- Adds ----------------------------------------------------------------

/** target[i] += source[i] for i < count (the residual stream). */
void add_in_place(int64_t count, float* target, const float* source);

/** y[r, :] += bias for r < rows, y [rows, d]. */
void add_bias(int64_t rows, int64_t d, float* y, const float* bias);

}  // namespace ot
