// What the parts of the GEMM share (gemm.cc dispatches; gemm_packed.cc and
// gemm_dot.cc hold the addon's own kernels). Not for use outside them.
#pragma once

#include <cstdint>

#include "gemm.h"

namespace ot {

// Up to this many rows, x·Wᵀ is computed by dot tiles instead of a packed kernel.
constexpr int64_t kSmallM = 24;

/** C = beta·C (k = 0 or alpha = 0: the product adds nothing). */
void gemm_scale_c(const GemmArgs& g);

/** C = alpha·A·Bᵀ + beta·C for A [m, k], B [n, k] with small m, by dot tiles, parallel over n. */
void gemm_nt_small(const GemmArgs& g);

/** The packed kernel for any layout and any m, batch-invariant (gemm_packed.cc). */
void gemm_packed(const GemmArgs& g);

}  // namespace ot
