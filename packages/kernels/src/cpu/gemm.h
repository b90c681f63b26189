// Dense matrix multiply, row-major:
//   C[m, n] = alpha · op(A) · op(B) + beta · C,  op(X) = X or Xᵀ,
// with A stored [m, k] (or [k, m] when transA), B stored [k, n] (or [n, k] when transB).
#pragma once

#include <cstdint>

namespace ot {

struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int64_t ldc = 0;
};

/** The op as built: OpenBLAS when the addon was built with it, else gemm_own. */
void gemm(const GemmArgs& g);
/** The addon's own packed SIMD kernel, multi-threaded on the pool. */
void gemm_own(const GemmArgs& g);
/**
 * x·Wᵀ (A [m, k], B [n, k]) in which each row of C depends only on the same row
 * of A: every dot product is summed in one order whatever m is. A sampler batches
 * many requests into one matmul; with this, one request's logits do not change
 * with what else is in the batch. Only the NT layout.
 */
void gemm_rows(const GemmArgs& g);
/** cblas_sgemm; returns false when the addon was built without a BLAS. */
bool gemm_blas(const GemmArgs& g);
/** "openblas <version>" or nullptr. */
const char* blas_name();
/** The SIMD instruction set the own kernels were compiled for. */
const char* simd_name();

}  // namespace ot
