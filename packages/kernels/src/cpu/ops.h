// Each kernel module registers its own JS functions; binding.cc calls them all.
#pragma once

#include <napi.h>

namespace ot {

void register_gemm(Napi::Env env, Napi::Object exports);
void register_gemm_bf16(Napi::Env env, Napi::Object exports);
void register_lora(Napi::Env env, Napi::Object exports);
void register_attention(Napi::Env env, Napi::Object exports);
void register_elementwise(Napi::Env env, Napi::Object exports);
void register_loss(Napi::Env env, Napi::Object exports);
void register_optim(Napi::Env env, Napi::Object exports);
void register_sample(Napi::Env env, Napi::Object exports);

}  // namespace ot
