// Run-time choice of the kernels' instruction set (see isa.h).
#include "isa.h"

#include <atomic>
#include <cstring>
#include <initializer_list>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

// GCC 12's __builtin_cpu_supports does not know AMX: CPUID leaf 7 says it (EDX
// bit 22 AMX-BF16, bit 24 AMX-TILE), and Linux hands the 8 KiB of tile state to
// a process only once it asks (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA);
// a kernel or hypervisor that refuses leaves the tiles unusable.
bool detect_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!(edx & (1u << 22)) || !(edx & (1u << 24))) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#else
// Not x86-64: the portable kernels; "Avx2" names the baseline path there.
bool detect_avx512() { return false; }
bool detect_avx512bf16() { return false; }
bool detect_amx() { return false; }
#endif

struct Cpu {
  bool avx512 = detect_avx512();
  // The AMX path also splits activations with AVX512_BF16's conversions.
  bool amx = avx512 && detect_avx512bf16() && detect_amx();
};

// Probed once, on first use (function-local statics: safe from any translation
// unit's static initialisers).
const Cpu& cpu() {
  static const Cpu probed;
  return probed;
}

Isa best_isa() { return cpu().amx ? Isa::Amx : cpu().avx512 ? Isa::Avx512 : Isa::Avx2; }

// Relaxed is enough: the loader selects before it hands the addon to anyone.
std::atomic<Isa>& chosen() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

}  // namespace

Isa active_isa() { return chosen().load(std::memory_order_relaxed); }

bool cpu_has_avx512() { return cpu().avx512; }

bool select_isa(Isa isa) {
  if (isa == Isa::Avx512 && !cpu().avx512) return false;
  if (isa == Isa::Amx && !cpu().amx) return false;
  chosen().store(isa, std::memory_order_relaxed);
  return true;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Amx:
      return "amx";
    case Isa::Avx512:
      return "avx512";
    default:
      return "avx2";
  }
}

bool isa_from_name(const char* name, Isa& isa) {
  for (const Isa candidate : {Isa::Avx2, Isa::Avx512, Isa::Amx}) {
    if (std::strcmp(name, isa_name(candidate)) == 0) {
      isa = candidate;
      return true;
    }
  }
  return false;
}

}  // namespace ot
