// Token sampling from rows of logits, natively: the sampler's per-step cost in
// JavaScript was as large as the model step itself at batch 16. For each row:
// temperature 0 → argmax; else inverse-CDF sampling of softmax(logits / T) with a
// given uniform number. Also the temperature-1 log-sum-exp, so the caller can
// report log π(token) at temperature 1.
#include <cmath>
#include <limits>

#include "common.h"
#include "ops.h"
#include "thread_pool.h"

namespace ot {
namespace {

void sample_row(const float* logits, int64_t vocab, float temperature, double u, int32_t* token, float* lse1) {
  float max = -std::numeric_limits<float>::infinity();
  int64_t argmax = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] > max) {
      max = logits[i];
      argmax = i;
    }
  }
  double z1 = 0.0;
  for (int64_t i = 0; i < vocab; ++i) z1 += std::exp(static_cast<double>(logits[i] - max));
  *lse1 = static_cast<float>(max + std::log(z1));
  if (temperature == 0.0f) {
    *token = static_cast<int32_t>(argmax);
    return;
  }
  const double inv = 1.0 / temperature;
  const double scaled_max = max * inv;  // argmax of logits/T is argmax of logits (T > 0)
  double z = 0.0;
  if (temperature == 1.0f) {
    z = z1;
  } else {
    for (int64_t i = 0; i < vocab; ++i) z += std::exp(logits[i] * inv - scaled_max);
  }
  double target = u * z;
  for (int64_t i = 0; i < vocab; ++i) {
    target -= std::exp(logits[i] * inv - scaled_max);
    if (target < 0.0) {
      *token = static_cast<int32_t>(i);
      return;
    }
  }
  *token = static_cast<int32_t>(vocab - 1);  // rounding left a sliver of mass at the end
}

// sampleRows(logits, n, vocab, temperatures, uniforms, tokens, lse)
//   logits [n, vocab]; temperatures [n] ≥ 0; uniforms [n] in [0, 1) (Float64Array);
//   tokens [n] (Int32Array) and lse [n] (temperature-1 log-sum-exp) are written.
void SampleRows(const Args& a) {
  const int64_t n = a.dim(1, "n");
  const int64_t vocab = a.dim(2, "vocab", 1);
  const float* logits = a.f32(0, "logits", n * vocab);
  const float* temperatures = a.f32(3, "temperatures", n);
  const double* uniforms = a.typed<double, napi_float64_array>(4, "uniforms", "Float64Array", n);
  int32_t* tokens = a.i32(5, "tokens", n);
  float* lse = a.f32(6, "lse", n);
  for (int64_t i = 0; i < n; ++i) {
    if (!(temperatures[i] >= 0.0f) || !std::isfinite(temperatures[i])) {
      throw_range(a.env(), a.op, "temperatures", "[" + std::to_string(i) + "] must be a finite number ≥ 0");
    }
    if (!(uniforms[i] >= 0.0 && uniforms[i] < 1.0)) {
      throw_range(a.env(), a.op, "uniforms", "[" + std::to_string(i) + "] must be in [0, 1)");
    }
  }
  parallel_for(n, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) sample_row(logits + r * vocab, vocab, temperatures[r], uniforms[r], tokens + r, lse + r);
  });
}

constexpr Op kOps[] = {{"sampleRows", 7, SampleRows}};

}  // namespace

void register_sample(Napi::Env env, Napi::Object exports) { export_ops(env, exports, kOps); }

}  // namespace ot
