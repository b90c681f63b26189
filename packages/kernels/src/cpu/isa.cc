// Run-time choice of the kernels' instruction set (see isa.h).
#include "isa.h"

#include <atomic>

namespace ot {

namespace {

#if defined(__x86_64__)
bool detect_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

bool detect_avx512bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}
#else
// Not x86-64: the portable kernels; "Avx2" names the baseline path there.
bool detect_avx512() { return false; }
bool detect_avx512bf16() { return false; }
#endif

struct Cpu {
  bool avx512 = detect_avx512();
  bool avx512bf16 = avx512 && detect_avx512bf16();
};

// Probed once, on first use (function-local statics: safe from any translation
// unit's static initialisers).
const Cpu& cpu() {
  static const Cpu probed;
  return probed;
}

// Relaxed is enough: the loader selects before it hands the addon to anyone.
std::atomic<Isa>& chosen() {
  static std::atomic<Isa> isa{cpu().avx512 ? Isa::Avx512 : Isa::Avx2};
  return isa;
}

}  // namespace

Isa active_isa() { return chosen().load(std::memory_order_relaxed); }

bool cpu_has_avx512() { return cpu().avx512; }

bool cpu_has_avx512bf16() { return cpu().avx512bf16 && active_isa() == Isa::Avx512; }

bool select_isa(Isa isa) {
  if (isa == Isa::Avx512 && !cpu().avx512) return false;
  chosen().store(isa, std::memory_order_relaxed);
  return true;
}

const char* isa_name(Isa isa) { return isa == Isa::Avx512 ? "avx512" : "avx2"; }

}  // namespace ot
