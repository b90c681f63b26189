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

void check_nr(const Args& a, int64_t nr, int expected, const char* why) {
  if (nr != expected) {
    throw_range(a.env(), a.op, "nr", "must be " + std::to_string(expected) + " (" + why + "), got " + std::to_string(nr));
  }
}

// packedLayout(n, k, bf16) → { nr, length }: the panel width and element count of W [n, k]
//   packed by packWeight on this process's path, for an f32 or (bf16 = true) a bf16 weight.
Napi::Value PackedLayout(const Napi::CallbackInfo& info) {
  const Args a{info, "packedLayout"};
  a.expect_count(3);
  const int64_t n = a.dim(0, "n", 0, kMaxDim);
  const int64_t k = a.dim(1, "k", 0, kMaxDim);
  const bool bf16 = a.boolean(2, "bf16");
  Napi::Object out = Napi::Object::New(a.env());
  out.Set("nr", bf16 ? packed_weight_bf16_nr() : packed_weight_nr());
  out.Set("length", static_cast<double>(bf16 ? packed_weight_bf16_elements(n, k) : packed_weight_floats(n, k)));
  return out;
}

// packWeight(w, n, k, nr, out): W [n, k] into out (packedLayout's length), panels of nr columns;
//   w and out both Float32Array, or both Uint16Array (bf16 bits). nr must be packedLayout's:
//   a pack is for this process's path.
void PackWeight(const Args& a) {
  const int64_t n = a.dim(1, "n", 0, kMaxDim);
  const int64_t k = a.dim(2, "k", 0, kMaxDim);
  const int64_t nr = a.dim(3, "nr");
  if (is_bf16(a, 0)) {
    check_nr(a, nr, packed_weight_bf16_nr(), "the active instruction set's bf16 panel width");
    const uint16_t* w = bf16_arg(a, 0, "w", n * k);
    auto* out = const_cast<uint16_t*>(bf16_arg(a, 4, "out", packed_weight_bf16_elements(n, k)));
    return pack_weight_bf16(w, n, k, out);
  }
  check_nr(a, nr, packed_weight_nr(), "the active instruction set's panel width");
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
  const int64_t nr = a.dim(6, "nr");
  const char* why = "the weight was packed for another instruction set";
  const float* x = a.f32(0, "x", m * k);
  float* y = a.f32(2, "y", m * n);
  const bool accumulate = a.boolean(7, "accumulate");
  if (is_bf16(a, 1)) {
    check_nr(a, nr, packed_weight_bf16_nr(), why);
    return gemm_prepacked_bf16(m, n, k, x, bf16_arg(a, 1, "packed", packed_weight_bf16_elements(n, k)), accumulate, y);
  }
  check_nr(a, nr, packed_weight_nr(), why);
  gemm_prepacked(m, n, k, x, a.f32(1, "packed", packed_weight_floats(n, k)), accumulate, y);
}

constexpr Op kOps[] = {{"gemm", 11, Gemm}, {"packWeight", 5, PackWeight}, {"linearPacked", 8, LinearPacked}};

}  // namespace

void register_gemm(Napi::Env env, Napi::Object exports) {
  export_ops(env, exports, kOps);
  exports.Set("packedLayout", Napi::Function::New(env, PackedLayout, "packedLayout"));  // returns { nr, length }
}

}  // namespace ot
