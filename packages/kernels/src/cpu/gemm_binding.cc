// JS binding of the dense matmul.
#include <cstring>
#include <string>

#include "common.h"
#include "gemm.h"
#include "ops.h"

namespace ot {
namespace {

// gemm(transA, transB, m, n, k, alpha, a, b, beta, c, backend)
//   c[m, n] = alpha · op(a) · op(b) + beta · c; a [m, k] ([k, m] if transA), b [k, n] ([n, k] if transB).
//   backend: "auto" (OpenBLAS when built with it), "own" (the addon's SIMD kernel), "blas", or
//   "rows" (x·Wᵀ only: each row of c independent of the other rows, for batched sampling).
void Gemm(const Args& a) {
  GemmArgs g;
  g.trans_a = a.boolean(0, "transA");
  g.trans_b = a.boolean(1, "transB");
  g.m = a.dim(2, "m");
  g.n = a.dim(3, "n");
  g.k = a.dim(4, "k");
  g.alpha = a.finite(5, "alpha");
  g.a = a.f32(6, "a", g.m * g.k);
  g.b = a.f32(7, "b", g.k * g.n);
  g.beta = a.finite(8, "beta");
  g.c = a.f32(9, "c", g.m * g.n);
  g.lda = g.trans_a ? g.m : g.k;
  g.ldb = g.trans_b ? g.k : g.n;
  g.ldc = g.n;
  if (!a.info[10].IsString()) throw_type(a.env(), a.op, "backend", "must be \"auto\", \"own\", \"blas\" or \"rows\"");
  const std::string backend = a.info[10].As<Napi::String>().Utf8Value();
  if (backend == "auto") {
    gemm(g);
  } else if (backend == "own") {
    gemm_own(g);
  } else if (backend == "rows") {
    if (g.trans_a || !g.trans_b) throw_range(a.env(), a.op, "backend", "\"rows\" takes only a · bᵀ (transA false, transB true)");
    gemm_rows(g);
  } else if (backend == "blas") {
    if (!gemm_blas(g)) throw_range(a.env(), a.op, "backend", "\"blas\" is unavailable: the addon was built without OpenBLAS");
  } else {
    throw_range(a.env(), a.op, "backend", "must be \"auto\", \"own\", \"blas\" or \"rows\", got \"" + backend + "\"");
  }
}

constexpr Op kOps[] = {{"gemm", 11, Gemm}};

}  // namespace

void register_gemm(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
