// AdamW with decoupled weight decay (PyTorch torch.optim.AdamW, Tinker's
// optim_step), and the float64 sum of squares behind a global gradient norm.
#pragma once

#include <cstdint>

namespace ot {

struct AdamWParams {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;       // 1-based, after this update
  double grad_scale;  // multiplies the gradient first (global-norm clipping)
};

/**
 * One step over `count` elements, in place on param, m and v:
 *   g  = grad_scale · grad
 *   p ← p · (1 − lr · weight_decay)
 *   m ← β1 · m + (1 − β1) · g
 *   v ← β2 · v + (1 − β2) · g²
 *   p ← p − lr · m̂ / (√v̂ + eps),   m̂ = m / (1 − β1^step), v̂ = v / (1 − β2^step)
 * which equals p ← p − lr · (m̂ / (√v̂ + eps) + weight_decay · p) with the old p.
 */
void adamw_step(int64_t count, float* param, const float* grad, float* m, float* v, const AdamWParams& h);

/** Σ x² over `count` elements, accumulated in float64; the same value for any thread count. */
double sum_of_squares(const float* x, int64_t count);

}  // namespace ot
