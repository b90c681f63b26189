// The sampler's decode-sized products as a decode step meets them: every
// weight read from memory, not from cache. Four Qwen2.5-0.5B-shaped layers'
// seven projections (240 MB of f32, well past any L3) are cycled through, and
// the lm_head [896 → 151,936] (545 MB) read after them, at 1, 4 and 16 rows,
// over the weights packed once (the sampler's product) and, side by side in
// the same rounds, through OpenBLAS over the plain weights.
import { gemm, linearPacked, machineInfo, packWeight } from "../src/index.ts";
import type { PackedWeight } from "../src/ops/gemm.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { interleavedMs, pairedRatio, progress, round, sideMedian } from "./timing.ts";

const [H, I, KV, VOCAB] = [896, 4864, 128, 151_936];
const LAYERS = 4;
const PROJECTIONS: [number, number][] = [
  [H, H], // q
  [H, KV], // k
  [H, KV], // v
  [H, H], // o
  [H, I], // gate
  [H, I], // up
  [I, H], // down
];
const ROWS = [1, 4, 16];

interface Weight {
  dIn: number;
  dOut: number;
  plain: Float32Array;
  packed: PackedWeight;
}

export function benchDecodeStream() {
  const { kernels, cpu } = machineInfo();
  progress(`decode-stream: ${LAYERS} Qwen-shaped layers of weights`);
  const random = rng(3);
  const weights: Weight[] = Array.from({ length: LAYERS }, () =>
    PROJECTIONS.map(([dIn, dOut]) => {
      const plain = randomF32(dIn * dOut, random);
      return { dIn, dOut, plain, packed: packWeight(plain, dOut, dIn) };
    }),
  ).flat();
  const headPlain = randomF32(H * VOCAB, random);
  const head: Weight = { dIn: H, dOut: VOCAB, plain: headPlain, packed: packWeight(headPlain, VOCAB, H) };
  const bytes = weights.reduce((n, w) => n + w.plain.byteLength, 0);
  const x = randomF32(Math.max(...ROWS) * I, random);
  const y = new Float32Array(Math.max(...ROWS) * VOCAB);
  return ROWS.map((rows) => {
    progress(`decode-stream: ${rows} row(s)`);
    const over = (list: Weight[], product: (w: Weight, x: Float32Array, y: Float32Array) => void) => () => {
      for (const w of list) product(w, x.subarray(0, rows * w.dIn), y.subarray(0, rows * w.dOut));
    };
    const ours = (w: Weight, xs: Float32Array, ys: Float32Array) => linearPacked(xs, w.packed, ys, rows);
    const blas = (w: Weight, xs: Float32Array, ys: Float32Array) =>
      gemm(rows, w.dOut, w.dIn, xs, w.plain, ys, { transB: true, backend: "blas" });
    const sides: Record<string, () => void> = { ours: over(weights, ours), ours_head: over([head], ours) };
    if (kernels.blas) {
      sides.blas = over(weights, blas);
      sides.blas_head = over([head], blas);
    }
    const samples = interleavedMs(sides, { minRounds: 9 });
    const ms = (side: string) => sideMedian(samples, side);
    const flops = weights.reduce((n, w) => n + 2 * rows * w.dIn * w.dOut, 0);
    const gbPerS = (side: string, n: number) => round(n / (ms(side) * 1e6), 1);
    return {
      rows,
      cpu,
      isa: kernels.isa,
      threads: kernels.threads,
      weight_mb: round(bytes / 1e6, 0),
      ours_gb_per_s: gbPerS("ours", bytes),
      ours_gflops: round(flops / (ms("ours") * 1e6), 1),
      blas_gb_per_s: kernels.blas ? gbPerS("blas", bytes) : null,
      // > 1: ours faster; the median of per-round time ratios.
      ours_over_blas: kernels.blas ? round(pairedRatio(samples, "blas", "ours"), 3) : null,
      lm_head_ms: round(ms("ours_head"), 2),
      lm_head_gb_per_s: gbPerS("ours_head", head.plain.byteLength),
      blas_lm_head_gb_per_s: kernels.blas ? gbPerS("blas_head", head.plain.byteLength) : null,
      lm_head_ours_over_blas: kernels.blas ? round(pairedRatio(samples, "blas_head", "ours_head"), 3) : null,
    };
  });
}
