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

/** Whether argument i is a Uint16Array (bf16 bits) rather than a Float32Array. */
bool is_bf16(const Args& a, size_t i) { return is_typed_array(a.info[i], napi_uint16_array); }

const uint16_t* bf16_arg(const Args& a, size_t i, const char* name, int64_t length) {
  return a.typed<uint16_t, napi_uint16_array>(i, name, "Uint16Array (bfloat16 bits)", length);
}

void check_nr(const Args& a, int64_t nr, const char* why) {
  if (nr != packed_weight_nr()) {
    throw_range(a.env(), a.op, "nr",
                "must be " + std::to_string(packed_weight_nr()) + " (" + why + "), got " + std::to_string(nr));
  }
}

// packWeight(w, n, k, nr, out): W [n, k] into out [packed_weight_floats(n, k)], panels of nr columns;
//   w and out both Float32Array, or both Uint16Array (bf16 bits). nr must be the active instruction
//   set's (info().packedNr): a pack is for this process's path.
void PackWeight(const Args& a) {
  const int64_t n = a.dim(1, "n", 0, kMaxDim);
  const int64_t k = a.dim(2, "k", 0, kMaxDim);
  check_nr(a, a.dim(3, "nr"), "the active instruction set's panel width");
  if (is_bf16(a, 0)) {
    const uint16_t* w = bf16_arg(a, 0, "w", n * k);
    auto* out = const_cast<uint16_t*>(bf16_arg(a, 4, "out", packed_weight_floats(n, k)));
    return pack_weight_bf16(w, n, k, out);
  }
  const float* w = a.f32(0, "w", n * k);
  float* out = a.f32(4, "out", packed_weight_floats(n, k));
  pack_weight(w, n, k, out);
}

// linearPacked(x, packed, y, m, n, k, nr, accumulate): y[m, n] (+)= x[m, k] · Wᵀ, W from packWeight
//   (f32 or bf16 panels).
void LinearPacked(const Args& a) {
  const int64_t m = a.dim(3, "rows", 0, kMaxDim);
  const int64_t n = a.dim(4, "dOut", 0, kMaxDim);
  const int64_t k = a.dim(5, "dIn", 0, kMaxDim);
  check_nr(a, a.dim(6, "nr"), "the weight was packed for another instruction set");
  const float* x = a.f32(0, "x", m * k);
  float* y = a.f32(2, "y", m * n);
  const bool accumulate = a.boolean(7, "accumulate");
  if (is_bf16(a, 1)) {
    return gemm_prepacked_bf16(m, n, k, x, bf16_arg(a, 1, "packed", packed_weight_floats(n, k)), accumulate, y);
  }
  gemm_prepacked(m, n, k, x, a.f32(1, "packed", packed_weight_floats(n, k)), accumulate, y);
}

constexpr Op kOps[] = {{"gemm", 11, Gemm}, {"packWeight", 5, PackWeight}, {"linearPacked", 8, LinearPacked}};

}  // namespace

void register_gemm(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
