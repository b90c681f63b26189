// JS bindings of AdamW and the sum of squares. Every hyperparameter is checked
// (finite, in range) before any element changes, so a bad call leaves the
// parameters, moments and step untouched.
#include <cmath>
#include <string>

#include "common.h"
#include "ops.h"
#include "optim.h"

namespace ot {
namespace {

/** A finite number in [lo, hi] (or [lo, hi) when !hi_inclusive), as float64. */
double hyper(const Args& a, size_t i, const char* name, double lo, double hi, bool hi_inclusive = true) {
  a.finite(i, name);  // type and finiteness
  const double x = a.info[i].As<Napi::Number>().DoubleValue();
  if (x < lo || x > hi || (!hi_inclusive && x == hi)) {
    const std::string upper = std::isinf(hi) ? "" : std::string(", ") + std::to_string(hi) + (hi_inclusive ? "]" : ")");
    const std::string range = std::isinf(hi) ? ">= " + std::to_string(lo) : "in [" + std::to_string(lo) + upper;
    throw_range(a.env(), a.op, name, "must be " + range + ", got " + std::to_string(x));
  }
  return x;
}

// adamwStep(param, grad, m, v, lr, beta1, beta2, eps, weightDecay, step, gradScale)
//   One AdamW step in place on param, m and v (all of param's length); see optim.h.
void AdamwStep(const Args& a) {
  AdamWParams h;
  h.lr = hyper(a, 4, "lr", 0.0, INFINITY);
  h.beta1 = hyper(a, 5, "beta1", 0.0, 1.0, false);
  h.beta2 = hyper(a, 6, "beta2", 0.0, 1.0, false);
  h.eps = hyper(a, 7, "eps", 0.0, INFINITY);
  h.weight_decay = hyper(a, 8, "weightDecay", 0.0, INFINITY);
  h.step = a.dim(9, "step", 1);
  h.grad_scale = hyper(a, 10, "gradScale", 0.0, INFINITY);
  float* param = a.f32(0, "param", -1);
  const int64_t count = a.length_of(0);
  const float* grad = a.f32(1, "grad", count);
  float* m = a.f32(2, "m", count);
  float* v = a.f32(3, "v", count);
  adamw_step(count, param, grad, m, v, h);
}

// sumOfSquares(buffers: Float32Array[]) → Σ over all buffers of Σ x², in float64.
Napi::Value SumOfSquares(const Napi::CallbackInfo& info) {
  Args a{info, "sumOfSquares"};
  a.expect_count(1);
  if (!info[0].IsArray()) throw_type(a.env(), a.op, "buffers", "must be an array of Float32Array");
  auto buffers = info[0].As<Napi::Array>();
  const uint32_t count = buffers.Length();
  for (uint32_t b = 0; b < count; ++b) {  // every type first, so a bad entry computes nothing
    Napi::Value item = buffers[b];
    if (!is_typed_array(item, napi_float32_array)) {
      throw_type(a.env(), a.op, ("buffers[" + std::to_string(b) + "]").c_str(), "must be a Float32Array");
    }
  }
  double total = 0.0;
  for (uint32_t b = 0; b < count; ++b) {
    Napi::Value item = buffers[b];
    auto array = item.As<Napi::Float32Array>();
    total += sum_of_squares(array.Data(), static_cast<int64_t>(array.ElementLength()));
  }
  return Napi::Number::New(info.Env(), total);
}

constexpr Op kOps[] = {{"adamwStep", 11, AdamwStep}};

}  // namespace

void register_optim(Napi::Env env, Napi::Object exports) {
  export_ops(env, exports, kOps);
  exports.Set("sumOfSquares", Napi::Function::New(env, SumOfSquares, "sumOfSquares"));  // returns a number
}

}  // namespace ot
