// JS binding of the bf16-weight products and the bf16 embedding gather. A bf16
// tensor crosses as a Uint16Array of its bits; every length and index is checked
// before a kernel runs.
#include "common.h"
#include "gemm_bf16.h"
#include "ops.h"

namespace ot {
namespace {

const uint16_t* bf16(const Args& a, size_t i, const char* name, int64_t length) {
  return a.typed<uint16_t, napi_uint16_array>(i, name, "Uint16Array (bfloat16 bits)", length);
}

/** A linear layer's sizes at 3..5 and the accumulate flag at 6 (both products). */
struct Linear {
  int64_t rows, d_in, d_out;
  bool accumulate;
};

Linear linear_args(const Args& a) {
  return {a.dim(3, "rows", 0, kMaxDim), a.dim(4, "dIn", 0, kMaxDim), a.dim(5, "dOut", 0, kMaxDim),
          a.boolean(6, "accumulate")};
}

// linearBf16(x, w, y, rows, dIn, dOut, accumulate)
//   y[rows, dOut] (+)= x[rows, dIn] · w[dOut, dIn]ᵀ, w bf16; batch-invariant.
void LinearBf16(const Args& a) {
  const Linear l = linear_args(a);
  const float* x = a.f32(0, "x", l.rows * l.d_in);
  const uint16_t* w = bf16(a, 1, "w", l.d_out * l.d_in);
  float* y = a.f32(2, "y", l.rows * l.d_out);
  gemm_bf16_nt(l.rows, l.d_out, l.d_in, x, w, l.accumulate, y);
}

// linearBackwardInputBf16(dy, w, dx, rows, dIn, dOut, accumulate)
//   dx[rows, dIn] (+)= dy[rows, dOut] · w[dOut, dIn], w bf16.
void LinearBackwardInputBf16(const Args& a) {
  const Linear l = linear_args(a);
  const float* dy = a.f32(0, "dy", l.rows * l.d_out);
  const uint16_t* w = bf16(a, 1, "w", l.d_out * l.d_in);
  float* dx = a.f32(2, "dx", l.rows * l.d_in);
  gemm_bf16_nn(l.rows, l.d_out, l.d_in, dy, w, l.accumulate, dx);
}

// embeddingBf16(ids, table, out, n, vocab, d): out[n, d] = table[ids[i], :] (bf16 table, f32 out).
void EmbeddingBf16(const Args& a) {
  const int64_t n = a.dim(3, "n", 0, kMaxDim);
  const int64_t vocab = a.dim(4, "vocab", 1, kMaxDim);
  const int64_t d = a.dim(5, "d", 1, kMaxDim);
  const int32_t* ids = a.i32(0, "ids", n);
  const uint16_t* table = bf16(a, 1, "table", vocab * d);
  float* out = a.f32(2, "out", n * d);
  check_indices(a, "ids", ids, n, 0, vocab);
  embedding_bf16(n, d, ids, table, out);
}

constexpr Op kOps[] = {
    {"linearBf16", 7, LinearBf16},
    {"linearBackwardInputBf16", 7, LinearBackwardInputBf16},
    {"embeddingBf16", 6, EmbeddingBf16},
};

}  // namespace

void register_gemm_bf16(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
