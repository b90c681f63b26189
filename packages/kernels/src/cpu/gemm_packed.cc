// The addon's own packed GEMM (GotoBLAS layout): B is packed one [KC × NC] block
// at a time into NR-column panels shared by every thread; each task packs an
// [MC × KC] block of A into MR-row panels and runs the register tile over them.
#include <algorithm>
#include <vector>

#include "gemm.h"
#include "gemm_microkernel.h"
#include "gemm_parts.h"
#include "thread_pool.h"

namespace ot {
namespace {

using gemm_tile::MR;
using gemm_tile::NR;

// Cache blocks: an [MC × KC] block of A stays in L2, a [KC × NR] panel of B in L1.
constexpr int64_t KC = 192;
constexpr int64_t MC = 120;   // multiple of MR
constexpr int64_t NC = 3072;  // multiple of NR

// Pack buffers grow once to their largest size and are reused: no allocation in
// steady state. Thread-local, so concurrent callers never share one.
float* scratch(std::vector<float>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

/** A[ic.., pc..] → panels of MR rows, k-major, scaled by alpha, zero-padded. */
void pack_a(const GemmArgs& g, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* out) {
  for (int64_t panel = 0; panel < mc; panel += MR) {
    const int rows = static_cast<int>(std::min<int64_t>(MR, mc - panel));
    float* dst = out + panel * kc;
    for (int r = 0; r < MR; ++r) {
      const int64_t i = ic + panel + r;
      if (r >= rows) {
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = 0.0f;
      } else if (!g.trans_a) {
        const float* src = g.a + i * g.lda + pc;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = g.alpha * src[p];
      } else {
        const float* src = g.a + pc * g.lda + i;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = g.alpha * src[p * g.lda];
      }
    }
  }
}

/** B[pc.., jc..] → panels of NR columns, k-major, zero-padded. Panels [p0, p1). */
void pack_b(const GemmArgs& g, int64_t jc, int64_t nc, int64_t pc, int64_t kc, float* out, int64_t p0, int64_t p1) {
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int64_t j0 = panel * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, nc - j0));
    float* dst = out + j0 * kc;
    if (!g.trans_b) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.b + (pc + p) * g.ldb + jc + j0;
        float* d = dst + p * NR;
        int c = 0;
        for (; c < cols; ++c) d[c] = src[c];
        for (; c < NR; ++c) d[c] = 0.0f;
      }
    } else {
      for (int c = 0; c < NR; ++c) {
        if (c >= cols) {
          for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = 0.0f;
          continue;
        }
        const float* src = g.b + (jc + j0 + c) * g.ldb + pc;
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = src[p];
      }
    }
  }
}

struct BlockJob {
  const GemmArgs* g;
  int64_t jc, nc, pc, kc;
  const float* b_packed;
  int64_t m_blocks, n_groups, panels_per_group;
  bool first;
};

/** One task: an MC block of rows × a group of NR panels. */
void run_block(const BlockJob& job, int64_t task) {
  thread_local std::vector<float> a_buffer;
  thread_local float acc[MR * NR];
  const GemmArgs& g = *job.g;
  const int64_t ib = task / job.n_groups;
  const int64_t group = task % job.n_groups;
  const int64_t ic = ib * MC;
  const int64_t mc = std::min(MC, g.m - ic);
  float* a_packed = scratch(a_buffer, static_cast<size_t>(((mc + MR - 1) / MR) * MR * job.kc));
  pack_a(g, ic, mc, job.pc, job.kc, a_packed);
  const int64_t total_panels = (job.nc + NR - 1) / NR;
  const int64_t p0 = group * job.panels_per_group;
  const int64_t p1 = std::min(total_panels, p0 + job.panels_per_group);
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int64_t j0 = panel * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, job.nc - j0));
    const float* bp = job.b_packed + j0 * job.kc;
    for (int64_t ir = 0; ir < mc; ir += MR) {
      const int rows = static_cast<int>(std::min<int64_t>(MR, mc - ir));
      float* c = g.c + (ic + ir) * g.ldc + job.jc + j0;
#ifdef OT_GEMM_AVX512
      // Full tiles update C directly (beta 0 or 1); edges go through a local tile.
      if (rows == MR && cols == NR && (!job.first || g.beta == 0.0f || g.beta == 1.0f)) {
        gemm_tile::micro_kernel_full(job.kc, a_packed + ir * job.kc, bp, c, g.ldc, job.first && g.beta == 0.0f);
        continue;
      }
#endif
      gemm_tile::micro_kernel(job.kc, a_packed + ir * job.kc, bp, acc);
      gemm_tile::store_tile(acc, c, g.ldc, rows, cols, job.first, g.beta);
    }
  }
}

}  // namespace

void gemm_own(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.0f) return gemm_scale_c(g);
  if (!g.trans_a && g.trans_b && g.m <= kSmallM) return gemm_nt_small(g);
  thread_local std::vector<float> b_buffer;
  const int threads = num_threads();
  for (int64_t jc = 0; jc < g.n; jc += NC) {
    const int64_t nc = std::min(NC, g.n - jc);
    const int64_t panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc);
      float* b_packed = scratch(b_buffer, static_cast<size_t>(panels * NR * kc));
      parallel_for(panels, grain_for(panels, 2), [&](int64_t p0, int64_t p1) { pack_b(g, jc, nc, pc, kc, b_packed, p0, p1); });
      BlockJob job{&g, jc, nc, pc, kc, b_packed, (g.m + MC - 1) / MC, 1, panels, pc == 0};
      // Few row blocks (small m): split the columns too, so every thread has work.
      if (job.m_blocks < threads * 2) {
        job.n_groups = std::min<int64_t>(panels, (threads * 4 + job.m_blocks - 1) / job.m_blocks);
        job.panels_per_group = (panels + job.n_groups - 1) / job.n_groups;
        job.n_groups = (panels + job.panels_per_group - 1) / job.panels_per_group;
      }
      parallel_for(job.m_blocks * job.n_groups, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) run_block(job, t);
      });
    }
  }
}

}  // namespace ot
