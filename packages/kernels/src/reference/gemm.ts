// Slow, obvious references: the definitions the native kernels are tested against.

type Vec = ArrayLike<number>;

/** c[m, n] = alpha · op(a) · op(b) + beta · c, row-major, accumulated in float64. */
export function refGemm(
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: Vec,
  b: Vec,
  beta: number,
  c: Vec,
): Float64Array {
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
