// The product over a frozen bf16 weight packed once, on Intel's AMX tiles (the
// "amx" path: active_isa() == Isa::Amx). A tile multiply takes bf16 on both
// sides, so each activation x is split into three bf16 parts, hi + lo + lo2
// (hi = x rounded to bf16, lo the rest rounded, lo2 what is left: together
// within 2⁻²⁵ of x), and every part meets the weight in its own f32 sum:
// y = Σ hi·w + (Σ lo·w + Σ lo2·w). The weight is exact in bf16 and a bf16
// product is exact in f32, so y has f32 accuracy (the sampler and the trainer,
// which widens the weight into f32 FMAs, still agree on a snapshot) at a third
// of the tiles' bf16 rate — many times the FMA units' (BENCHMARKS.md).
//
// Batch-invariant: each of a row's three parts is one row of an A tile, summed
// over K in tile order by the same instruction whatever else is in the tile, and
// the parts are combined in one order; a row's bits do not depend on m.
#pragma once

#include <cstdint>

namespace ot {

/** Elements of amx_pack_weight's layout for W [n, k]: 16-column panels, k padded to 32. */
int64_t amx_packed_elements(int64_t n, int64_t k);

/** The panel width of amx_pack_weight's layout. */
constexpr int kAmxPanelColumns = 16;

/**
 * W [n, k] (bf16) into 16-column panels, each a run of 16 × 32 tiles: tile row r
 * holds, for each column c, W[c, 32·t + 2r] and W[c, 32·t + 2r + 1] (the pairs
 * the tile multiply reads); past n and k, zeros.
 */
void amx_pack_weight(const uint16_t* w, int64_t n, int64_t k, uint16_t* out);

/** y[m, n] (+)= x[m, k] · Wᵀ, W from amx_pack_weight. Only when active_isa() is Isa::Amx. */
void amx_gemm_prepacked(int64_t m, int64_t n, int64_t k, const float* x, const uint16_t* packed, bool accumulate,
                        float* y);

}  // namespace ot
