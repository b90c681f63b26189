import { gemm, kernelInfo } from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { medianMs, progress, round } from "./timing.ts";

// Qwen2.5-0.5B shapes: [rows, dIn, dOut] of y = x · Wᵀ.
const SHAPES: [number, number, number][] = [
  [1, 896, 896],
  [16, 896, 4864],
  [512, 896, 4864],
  [512, 4864, 896],
];

export function benchGemm() {
  const random = rng(1);
  const blas = kernelInfo().blas;
  return SHAPES.map(([rows, dIn, dOut]) => {
    progress(`gemm [${rows}, ${dIn}, ${dOut}]`);
    const x = randomF32(rows * dIn, random);
    const w = randomF32(dOut * dIn, random);
    const y = new Float32Array(rows * dOut);
    const flops = 2 * rows * dIn * dOut;
    const gflops = (backend: "auto" | "own" | "blas") =>
      round(flops / (medianMs(() => gemm(rows, dOut, dIn, x, w, y, { transB: true, backend })) * 1e6), 2);
    const own = gflops("own");
    const ref = blas ? gflops("blas") : null;
    return {
      shape: [rows, dIn, dOut],
      gflops: blas ? gflops("auto") : own,
      own_gflops: own,
      ref_gflops: ref,
      ref_reason: blas ? undefined : "the addon was built without OpenBLAS",
      own_over_ref: ref ? round(own / ref, 3) : null,
    };
  });
}
