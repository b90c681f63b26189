// Slow, obvious references: the definitions the native kernels are tested against.
import type { GemmArgs } from "../ops/gemm.ts";
import type { Vec } from "./vec.ts";

/** c[m, n] = alpha · op(a) · op(b) + beta · c, row-major, accumulated in float64. */
export function refGemm(...[transA, transB, m, n, k, alpha, a, b, beta, c]: GemmArgs<Vec>): Float64Array {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let p = 0; p < k; p++) {
        const av = transA ? a[p * m + i] : a[i * k + p];
        const bv = transB ? b[j * k + p] : b[p * n + j];
        sum += (av as number) * (bv as number);
      }
      out[i * n + j] = alpha * sum + (beta === 0 ? 0 : beta * (c[i * n + j] as number));
    }
  }
  return out;
}
