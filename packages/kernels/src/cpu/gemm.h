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

/** The arguments in cblas_sgemm's order (row-major), so a call fits on one line. */
inline GemmArgs gemm_args(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return GemmArgs{trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc};
}

/** The op as built: OpenBLAS when the addon was built with it, else gemm_own. */
void gemm(const GemmArgs& g);
/** The addon's own packed SIMD kernel, multi-threaded on the pool. */
void gemm_own(const GemmArgs& g);
/**
 * x·Wᵀ (A [m, k], B [n, k]) in which each row of C depends only on the same row
 * of A: every dot product is summed in one order whatever m is (and whatever the
 * threads or the instruction set). A sampler batches many requests into one
 * matmul; with this, one request's logits do not change with what else is in the
 * batch. Only the NT layout; the packed kernel (gemm_packed.cc), at every m.
 */
void gemm_rows(const GemmArgs& g);
/**
 * A frozen weight W [n, k] packed once for x·Wᵀ: NR-column panels (NR: the active
 * instruction set's tile width), each [k × NR] k-major and zero-padded, panel
 * after panel. gemm_prepacked over it gives gemm_rows' bits, without packing W.
 */
int packed_weight_nr();
int64_t packed_weight_floats(int64_t n, int64_t k);
void pack_weight(const float* w, int64_t n, int64_t k, float* out);
/** y[m, n] (+)= x[m, k] · Wᵀ with W from pack_weight: batch-invariant, as gemm_rows. */
void gemm_prepacked(int64_t m, int64_t n, int64_t k, const float* x, const float* packed, bool accumulate,
                    float* y);
/**
 * The same for a bf16 weight: the panels hold bf16 pairs (slot 2l: column l,
 * slot 2l + 1: column l + NR/2, so one 32-bit lane widens exactly into both
 * halves of a panel row). Same floats(n, k) count of elements; the product's
 * bits equal gemm_prepacked over the widened weight. On the AMX path instead
 * gemm_amx.h's layout and product (f32 accuracy, other bits): the panel width
 * and the length come from packed_weight_bf16_nr and _elements.
 */
int packed_weight_bf16_nr();
int64_t packed_weight_bf16_elements(int64_t n, int64_t k);
void pack_weight_bf16(const uint16_t* w, int64_t n, int64_t k, uint16_t* out);
void gemm_prepacked_bf16(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* packed, bool accumulate,
                         float* y);
/** cblas_sgemm; returns false when the addon was built without a BLAS. */
bool gemm_blas(const GemmArgs& g);
/** "openblas <version>" or nullptr. */
const char* blas_name();
/**
 * The kernel set OpenBLAS chose for this CPU ("Haswell", "SkylakeX", … or a
 * fallback such as "Prescott" for a CPU it does not know; OPENBLAS_CORETYPE
 * overrides it), or nullptr without OpenBLAS.
 */
const char* blas_core();
/** The instruction set the own kernels run on: "avx512", "avx2+fma" or "scalar" (see isa.h). */
const char* simd_name();

}  // namespace ot
