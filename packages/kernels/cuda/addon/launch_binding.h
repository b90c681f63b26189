// A kernels/*.cu launcher as a JavaScript function, derived from its C++
// signature: every parameter but the trailing cudaStream_t comes from one JS
// argument (a pointer from a bigint device address or null, an integer from
// a safe integer in its type's range, a float or double from a number), the
// stream is the device's. A launch error is a JS Error naming the launcher and
// the CUDA error; a bad argument names its position. One template, so adding a
// launcher to the table in device_binding.cc is the whole binding.
#pragma once

#include <napi.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../include/ot_cuda/runtime.h"

namespace ot_cuda::addon {

std::string describe_error(cudaError_t error);

// JS argument `first + i` is the launcher's parameter i.
template <class T>
T launch_arg(const Napi::CallbackInfo& info, std::size_t first, std::size_t i, const char* name) {
  const Napi::Value v = info[first + i];
  const auto bad = [&](const char* want) {
    throw Napi::TypeError::New(info.Env(), std::string(name) + ": argument " + std::to_string(i) + " must be " + want);
  };
  if constexpr (std::is_pointer_v<T>) {
    if (v.IsNull() || v.IsUndefined()) return nullptr;
    if (!v.IsBigInt()) bad("a device address (bigint) or null");
    bool lossless = false;
    const std::uint64_t address = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) bad("a device address within 64 bits");
    return reinterpret_cast<T>(static_cast<std::uintptr_t>(address));
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    if (!v.IsNumber()) bad("an integer");
    const double d = v.As<Napi::Number>().DoubleValue();
    using I = std::conditional_t<std::is_enum_v<T>, int, T>;
    if (!(d == static_cast<double>(static_cast<std::int64_t>(d))) ||
        d < static_cast<double>(std::numeric_limits<I>::min()) ||
        d > static_cast<double>(std::numeric_limits<I>::max())) {
      bad("an integer in its C type's range");
    }
    return static_cast<T>(static_cast<I>(d));
  } else {
    static_assert(std::is_floating_point_v<T>, "a launcher parameter is a pointer, an integer or a float");
    if (!v.IsNumber()) bad("a number");
    return static_cast<T>(v.As<Napi::Number>().DoubleValue());
  }
}

template <class... A, std::size_t... I>
cudaError_t call_launcher(cudaError_t (*fn)(A...), const Napi::CallbackInfo& info, std::size_t first, const char* name,
                          cudaStream_t stream, std::index_sequence<I...>) {
  using Args = std::tuple<A...>;
  return fn(launch_arg<std::tuple_element_t<I, Args>>(info, first, I, name)..., stream);
}

// fn's last parameter is its stream; JS arguments first, first + 1, … are the others, in order.
template <class... A>
cudaError_t invoke_launcher(cudaError_t (*fn)(A...), const Napi::CallbackInfo& info, std::size_t first,
                            const char* name, cudaStream_t stream) {
  constexpr std::size_t n = sizeof...(A) - 1;
  static_assert(std::is_same_v<std::tuple_element_t<n, std::tuple<A...>>, cudaStream_t>,
                "a launcher takes its cudaStream_t last");
  if (info.Length() != first + n) {
    throw Napi::TypeError::New(info.Env(), std::string(name) + ": takes " + std::to_string(n) + " arguments, got " +
                                               std::to_string(info.Length() - first));
  }
  return call_launcher(fn, info, first, name, stream, std::make_index_sequence<n>{});
}

// A workspace-size function (ot_cuda_<launcher>_workspace_bytes): every
// parameter from JS arguments first, first + 1, ….
template <class... A, std::size_t... I>
std::size_t call_workspace(std::size_t (*fn)(A...), const Napi::CallbackInfo& info, std::size_t first,
                           const char* name, std::index_sequence<I...>) {
  using Args = std::tuple<A...>;
  return fn(launch_arg<std::tuple_element_t<I, Args>>(info, first, I, name)...);
}
template <class... A>
std::size_t invoke_workspace(std::size_t (*fn)(A...), const Napi::CallbackInfo& info, std::size_t first,
                             const char* name) {
  if (info.Length() != first + sizeof...(A)) {
    throw Napi::TypeError::New(info.Env(), std::string(name) + ": takes " + std::to_string(sizeof...(A)) +
                                               " sizes, got " + std::to_string(info.Length() - first));
  }
  return call_workspace(fn, info, first, name, std::index_sequence_for<A...>{});
}

}  // namespace ot_cuda::addon
