// Argument checks at the binding boundary: every op validates types, lengths and
// ranges before touching memory, and throws a TypeError or RangeError that names
// the op and the argument. Also how a binding module exports its ops (export_ops).
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace ot {

// Sizes capped so that a product of two (or n · heads · headDim) fits int64: a
// length check can never be fooled by an overflowed product.
constexpr int64_t kMaxDim = INT64_C(1) << 31;

[[noreturn]] inline void throw_type(Napi::Env env, const char* op, const char* arg, const std::string& what) {
  throw Napi::TypeError::New(env, std::string(op) + ": " + arg + " " + what);
}

[[noreturn]] inline void throw_range(Napi::Env env, const char* op, const char* arg, const std::string& what) {
  throw Napi::RangeError::New(env, std::string(op) + ": " + arg + " " + what);
}

/** Whether v is a typed array of that kind (Float32Array: napi_float32_array). */
inline bool is_typed_array(const Napi::Value& v, napi_typedarray_type kind) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == kind;
}

/** The op's name and call info, so checks can name what was wrong. */
struct Args {
  const Napi::CallbackInfo& info;
  const char* op;

  Napi::Env env() const { return info.Env(); }

  void expect_count(size_t n) const {
    if (info.Length() < n) {
      throw Napi::TypeError::New(env(), std::string(op) + ": expected " + std::to_string(n) + " arguments, got " +
                                            std::to_string(info.Length()));
    }
  }

  /** A non-negative integer no larger than `max`. */
  int64_t dim(size_t i, const char* name, int64_t min = 0, int64_t max = INT64_C(1) << 40) const {
    Napi::Value v = info[i];
    if (!v.IsNumber()) throw_type(env(), op, name, "must be a number");
    double d = v.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(d) || std::floor(d) != d) throw_range(env(), op, name, "must be an integer, got " + std::to_string(d));
    if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
      throw_range(env(), op, name, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                       std::to_string(static_cast<int64_t>(d)));
    }
    return static_cast<int64_t>(d);
  }

  /** A finite number (NaN and ±Infinity are refused). */
  float finite(size_t i, const char* name) const {
    Napi::Value v = info[i];
    if (!v.IsNumber()) throw_type(env(), op, name, "must be a number");
    double d = v.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(d)) throw_range(env(), op, name, "must be finite, got " + std::to_string(d));
    return static_cast<float>(d);
  }

  bool boolean(size_t i, const char* name) const {
    Napi::Value v = info[i];
    if (!v.IsBoolean()) throw_type(env(), op, name, "must be a boolean");
    return v.As<Napi::Boolean>().Value();
  }

  bool is_null(size_t i) const { return info[i].IsNull() || info[i].IsUndefined(); }

  template <typename T, napi_typedarray_type Kind>
  T* typed(size_t i, const char* name, const char* type_name, int64_t expected_length) const {
    Napi::Value v = info[i];
    if (!is_typed_array(v, Kind)) throw_type(env(), op, name, std::string("must be a ") + type_name);
    auto array = v.As<Napi::TypedArrayOf<T>>();
    if (expected_length >= 0 && static_cast<int64_t>(array.ElementLength()) != expected_length) {
      throw_range(env(), op, name, "has length " + std::to_string(array.ElementLength()) + ", expected " +
                                       std::to_string(expected_length));
    }
    return array.Data();
  }

  /** A Float32Array of exactly `length` elements (-1: any length). */
  float* f32(size_t i, const char* name, int64_t length) const {
    return typed<float, napi_float32_array>(i, name, "Float32Array", length);
  }

  /** As f32, or nullptr when the argument is null or undefined (an optional output). */
  float* f32_or_null(size_t i, const char* name, int64_t length) const {
    return is_null(i) ? nullptr : f32(i, name, length);
  }

  int32_t* i32(size_t i, const char* name, int64_t length) const {
    return typed<int32_t, napi_int32_array>(i, name, "Int32Array", length);
  }

  uint8_t* u8(size_t i, const char* name, int64_t length) const {
    return typed<uint8_t, napi_uint8_array>(i, name, "Uint8Array", length);
  }

  /** Element count of a typed array argument (after a type check by the caller). */
  int64_t length_of(size_t i) const { return static_cast<int64_t>(info[i].As<Napi::TypedArray>().ElementLength()); }
};

/** Checks that every index in `values[0..n)` lies in [lo, hi). */
inline void check_indices(const Args& a, const char* name, const int32_t* values, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] < lo || values[i] >= hi) {
      const std::string element = std::string(name) + "[" + std::to_string(i) + "]";
      throw_range(a.env(), a.op, element.c_str(),
                  "is " + std::to_string(values[i]) + ", expected [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
    }
  }
}

/**
 * One JS function of a binding module: its name, the argument count it insists
 * on, and a body that checks the arguments (through Args) and runs the kernel.
 * The function returns undefined: ops write into the buffers they are given.
 */
struct Op {
  const char* name;
  size_t arg_count;
  void (*run)(const Args& a);
};

inline Napi::Value call_op(const Napi::CallbackInfo& info) {
  const Op& op = *static_cast<const Op*>(info.Data());
  const Args a{info, op.name};
  a.expect_count(op.arg_count);
  op.run(a);
  return info.Env().Undefined();
}

/** Sets exports[op.name] for every op of a module's table (static, so each Op outlives the addon). */
template <size_t N>
void export_ops(Napi::Env env, Napi::Object exports, const Op (&ops)[N]) {
  for (const Op& op : ops) exports.Set(op.name, Napi::Function::New<call_op>(env, op.name, const_cast<Op*>(&op)));
}

}  // namespace ot
