// The addon's entry point: registers every module's functions and the addon info.
#include <napi.h>

#include <cstdint>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "common.h"
#include "gemm.h"
#include "isa.h"
#include "ops.h"
#include "thread_pool.h"

namespace {

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("backend", "cpu");
  const char* blas = ot::blas_name();
  out.Set("blas", blas ? Napi::Value(Napi::String::New(env, blas)) : env.Null());
  const char* core = ot::blas_core();
  out.Set("blasCore", core ? Napi::Value(Napi::String::New(env, core)) : env.Null());
  out.Set("simd", ot::simd_name());
#if defined(__x86_64__)
  out.Set("isa", ot::isa_name(ot::active_isa()));  // absent elsewhere: no choice of path
#endif
  out.Set("threads", ot::num_threads());
  out.Set("packedNr", ot::packed_weight_nr());
  return out;
}

Napi::Value SetNumThreads(const Napi::CallbackInfo& info) {
  ot::Args a{info, "setNumThreads"};
  a.expect_count(1);
  ot::set_num_threads(static_cast<int>(a.dim(0, "threads", 1, 1024)));
  return info.Env().Undefined();
}

// selectIsa("avx2" | "avx512" | "amx"): forces the kernels' instruction set (the
// loader calls it once, before any kernel runs, for OPENTINKER_KERNELS_ISA).
Napi::Value SelectIsa(const Napi::CallbackInfo& info) {
  ot::Args a{info, "selectIsa"};
  a.expect_count(1);
  const std::string name = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  ot::Isa isa = ot::Isa::Avx2;
  if (!ot::isa_from_name(name.c_str(), isa)) {
    ot::throw_range(a.env(), a.op, "isa", "must be \"avx2\", \"avx512\" or \"amx\"");
  }
  if (!ot::select_isa(isa)) {
    ot::throw_range(a.env(), a.op, "isa",
                    isa == ot::Isa::Amx
                        ? "\"amx\" needs a CPU with AMX-TILE, AMX-BF16 and AVX-512 (F, BW, DQ, VL, BF16) whose "
                          "kernel lets this process use the tiles, and this one lacks them"
                        : "\"avx512\" needs a CPU with AVX-512 F, BW, DQ and VL, and this one lacks them");
  }
  return info.Env().Undefined();
}

// adviseHugePages(buffer) → boolean: asks Linux to back the whole 2 MiB pages
// inside a large buffer not yet touched with huge pages (transparent huge pages
// in "madvise" mode), so that first writing it faults once per 2 MiB instead of
// once per 4 KiB: a sampler's KV cache is written block by block as prompts
// arrive, and each fresh block cost its page faults. False where it cannot.
Napi::Value AdviseHugePages(const Napi::CallbackInfo& info) {
  ot::Args a{info, "adviseHugePages"};
  a.expect_count(1);
  const float* data = a.f32(0, "buffer", -1);
  bool advised = false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (start + static_cast<uintptr_t>(a.length_of(0)) * sizeof(float)) & ~(kHuge - 1);
  advised = end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0;
#endif
  return Napi::Boolean::New(info.Env(), advised);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("setNumThreads", Napi::Function::New(env, SetNumThreads, "setNumThreads"));
  exports.Set("selectIsa", Napi::Function::New(env, SelectIsa, "selectIsa"));
  exports.Set("adviseHugePages", Napi::Function::New(env, AdviseHugePages, "adviseHugePages"));
  ot::register_gemm(env, exports);
  ot::register_gemm_bf16(env, exports);
  ot::register_lora(env, exports);
  ot::register_attention(env, exports);
  ot::register_elementwise(env, exports);
  ot::register_loss(env, exports);
  ot::register_optim(env, exports);
  ot::register_sample(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(opentinker_kernels, Init)
