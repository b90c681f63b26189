// JS bindings of the multi-LoRA op. An adapter table is built once (validated and
// holding references to its weight arrays) and reused by every call, so a decode
// step pays no per-adapter argument parsing.
#include <string>
#include <vector>

#include "common.h"
#include "lora.h"
#include "ops.h"

namespace ot {
namespace {

class LoraTable : public Napi::ObjectWrap<LoraTable> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LoraTable",
                       {InstanceAccessor<&LoraTable::Count>("count"), InstanceAccessor<&LoraTable::DIn>("dIn"),
                        InstanceAccessor<&LoraTable::DOut>("dOut"), InstanceAccessor<&LoraTable::Ranks>("ranks")});
  }

  // new LoraTable(dIn, dOut, as: Float32Array[], bs: Float32Array[], scales: number[])
  //   as[g] is A_g [r_g, dIn], bs[g] is B_g [dOut, r_g]; r_g is inferred from as[g].
  explicit LoraTable(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LoraTable>(info) {
    Args a{info, "LoraTable"};
    a.expect_count(5);
    d_in_ = a.dim(0, "dIn", 1);
    d_out_ = a.dim(1, "dOut", 1);
    if (!info[2].IsArray()) throw_type(a.env(), a.op, "as", "must be an array of Float32Array");
    if (!info[3].IsArray()) throw_type(a.env(), a.op, "bs", "must be an array of Float32Array");
    if (!info[4].IsArray()) throw_type(a.env(), a.op, "scales", "must be an array of numbers");
    auto as = info[2].As<Napi::Array>();
    auto bs = info[3].As<Napi::Array>();
    auto scales = info[4].As<Napi::Array>();
    const uint32_t count = as.Length();
    if (bs.Length() != count || scales.Length() != count) {
      throw_range(a.env(), a.op, "bs/scales", "must have as many entries as as (" + std::to_string(count) + ")");
    }
    for (uint32_t g = 0; g < count; ++g) {
      const std::string at = "[" + std::to_string(g) + "]";
      Napi::Value av = as[g], bv = bs[g], sv = scales[g];
      if (!is_typed_array(av, napi_float32_array)) throw_type(a.env(), a.op, ("as" + at).c_str(), "must be a Float32Array");
      if (!is_typed_array(bv, napi_float32_array)) throw_type(a.env(), a.op, ("bs" + at).c_str(), "must be a Float32Array");
      auto af = av.As<Napi::Float32Array>();
      auto bf = bv.As<Napi::Float32Array>();
      const int64_t a_len = static_cast<int64_t>(af.ElementLength());
      if (a_len == 0 || a_len % d_in_ != 0) {
        throw_range(a.env(), a.op, ("as" + at).c_str(),
                    "has length " + std::to_string(a_len) + ", expected rank × dIn (dIn " + std::to_string(d_in_) + ")");
      }
      const int64_t rank = a_len / d_in_;
      if (static_cast<int64_t>(bf.ElementLength()) != d_out_ * rank) {
        throw_range(a.env(), a.op, ("bs" + at).c_str(),
                    "has length " + std::to_string(bf.ElementLength()) + ", expected dOut × rank = " +
                        std::to_string(d_out_ * rank));
      }
      if (!sv.IsNumber() || !std::isfinite(sv.As<Napi::Number>().DoubleValue())) {
        throw_range(a.env(), a.op, ("scales" + at).c_str(), "must be a finite number");
      }
      adapters_.push_back({af.Data(), bf.Data(), rank, sv.As<Napi::Number>().FloatValue()});
      grads_.push_back({af.Data(), bf.Data()});
      refs_.push_back(Napi::Persistent(af.As<Napi::Object>()));
      refs_.push_back(Napi::Persistent(bf.As<Napi::Object>()));
    }
  }

  int64_t d_in() const { return d_in_; }
  int64_t d_out() const { return d_out_; }
  int64_t count() const { return static_cast<int64_t>(adapters_.size()); }
  const LoraAdapter* adapters() const { return adapters_.data(); }
  const LoraGrad* as_grads() const { return grads_.data(); }

  bool same_shapes(const LoraTable& other) const {
    if (other.d_in_ != d_in_ || other.d_out_ != d_out_ || other.count() != count()) return false;
    for (size_t g = 0; g < adapters_.size(); ++g) {
      if (adapters_[g].rank != other.adapters_[g].rank) return false;
    }
    return true;
  }

 private:
  Napi::Value Count(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(count())); }
  Napi::Value DIn(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(d_in_)); }
  Napi::Value DOut(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(d_out_)); }
  Napi::Value Ranks(const Napi::CallbackInfo& info) {
    auto out = Napi::Array::New(info.Env(), adapters_.size());
    for (uint32_t g = 0; g < adapters_.size(); ++g) out[g] = Napi::Number::New(info.Env(), static_cast<double>(adapters_[g].rank));
    return out;
  }

  int64_t d_in_ = 0, d_out_ = 0;
  std::vector<LoraAdapter> adapters_;
  std::vector<LoraGrad> grads_;
  std::vector<Napi::ObjectReference> refs_;  // keeps the weight arrays alive
};

Napi::FunctionReference* table_constructor = nullptr;

LoraTable* table_arg(const Args& a, size_t i, const char* name) {
  Napi::Value v = a.info[i];
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(table_constructor->Value())) {
    throw_type(a.env(), a.op, name, "must be a LoraTable");
  }
  return LoraTable::Unwrap(v.As<Napi::Object>());
}

// loraForward(x, n, slots, table, y, rowInvariant): y[n, dOut] += per-row LoRA deltas of x[n, dIn].
void LoraForward(const Args& a) {
  LoraTable* table = table_arg(a, 3, "table");
  const int64_t n = a.dim(1, "n");
  const float* x = a.f32(0, "x", n * table->d_in());
  const int32_t* slots = a.i32(2, "slots", n);
  check_indices(a, "slots", slots, n, -1, table->count());
  float* y = a.f32(4, "y", n * table->d_out());
  const bool row_invariant = a.boolean(5, "rowInvariant");
  lora_forward({n, table->d_in(), table->d_out()}, x, slots, table->adapters(), table->count(), y, row_invariant);
}

// loraBackward(x, dy, n, slots, table, dx | null, grads): grads (a LoraTable over
// dA/dB buffers with the same ranks) accumulate; dx[n, dIn] += the LoRA part.
void LoraBackward(const Args& a) {
  LoraTable* table = table_arg(a, 4, "table");
  LoraTable* grads = table_arg(a, 6, "grads");
  if (!grads->same_shapes(*table)) throw_range(a.env(), a.op, "grads", "must have the table's dIn, dOut, count and ranks");
  const int64_t n = a.dim(2, "n");
  const float* x = a.f32(0, "x", n * table->d_in());
  const float* dy = a.f32(1, "dy", n * table->d_out());
  const int32_t* slots = a.i32(3, "slots", n);
  check_indices(a, "slots", slots, n, -1, table->count());
  float* dx = a.f32_or_null(5, "dx", n * table->d_in());
  lora_backward({n, table->d_in(), table->d_out()}, x, dy, slots, table->adapters(), table->count(), dx,
                grads->as_grads());
}

constexpr Op kOps[] = {{"loraForward", 6, LoraForward}, {"loraBackward", 7, LoraBackward}};

}  // namespace

void register_lora(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = LoraTable::Define(env);
  table_constructor = new Napi::FunctionReference(Napi::Persistent(ctor));
  exports.Set("LoraTable", ctor);
  export_ops(env, exports, kOps);
}

}  // namespace ot
