// The instruction set the kernels run on, chosen once when the addon loads: the
// addon is compiled for x86-64 with AVX2+FMA (the baseline every supported CPU
// has), and the AVX-512 kernels live in functions compiled for that target and
// called only when active_isa() says so. Amx is Avx512 plus Intel's AMX tiles,
// which only the products over a bf16 weight packed once use (gemm_amx.h).
// OPENTINKER_KERNELS_ISA (read in src/env.ts) forces a path through select_isa().
#pragma once

namespace ot {

enum class Isa { Avx2, Avx512, Amx };

/** Whether `isa` runs the AVX-512 kernels (Avx512, and Amx for everything but its tiles). */
inline bool uses_avx512(Isa isa) { return isa != Isa::Avx2; }

/** The path the kernels take: the best the CPU has, unless select_isa() forced one. */
Isa active_isa();

/** Whether the CPU has the AVX-512 subsets the Avx512 kernels use (F, BW, DQ, VL). */
bool cpu_has_avx512();

/**
 * Forces the path (called by the loader before any kernel runs). Returns false,
 * changing nothing, when the CPU lacks the instructions of `isa`.
 */
bool select_isa(Isa isa);

/** "avx2", "avx512" or "amx": the name OPENTINKER_KERNELS_ISA and info().isa use. */
const char* isa_name(Isa isa);

/** The path isa_name calls `name`; false, leaving `isa` as it is, for any other name. */
bool isa_from_name(const char* name, Isa& isa);

}  // namespace ot
