import {
  type GemmBackend,
  gemm,
  linearPacked,
  machineInfo,
  packWeight,
  setKernelThreads,
} from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { interleavedMs, pairedRatio, progress, round, sideMedian } from "./timing.ts";

// Qwen2.5-0.5B shapes, [rows, dIn, dOut]. "sample": y = x · Wᵀ as the sampler runs it
// (its default, batch-invariant product over the weight packed once: "packed"; the
// same sums as "rows", which packs W per call). "train": the linear layer's three
// products as training runs them ("auto": OpenBLAS when built with it, else "own").
const CASES: {
  use: "sample" | "train";
  product: "x·Wᵀ" | "dy·W" | "dyᵀ·x";
  shape: [number, number, number];
}[] = [
  { use: "sample", product: "x·Wᵀ", shape: [1, 896, 896] },
  { use: "sample", product: "x·Wᵀ", shape: [16, 896, 4864] },
  { use: "sample", product: "x·Wᵀ", shape: [512, 896, 4864] },
  { use: "sample", product: "x·Wᵀ", shape: [512, 4864, 896] },
  { use: "train", product: "x·Wᵀ", shape: [512, 896, 4864] },
  { use: "train", product: "dy·W", shape: [512, 896, 4864] },
  { use: "train", product: "dyᵀ·x", shape: [512, 896, 4864] },
  { use: "train", product: "dy·W", shape: [512, 4864, 896] },
  { use: "train", product: "dyᵀ·x", shape: [512, 4864, 896] },
];

/**
 * Our side of each case against OpenBLAS's cblas_sgemm (its own threads, when the
 * addon has it) and against "auto" (the op as built), in interleaved rounds; every
 * ratio is the median of per-round ratios. For "train" our side is "own", the
 * kernel a build without OpenBLAS runs; for "sample" it is the packed weight's
 * product (the packing, done once per weight, is not timed).
 */
export function benchGemm() {
  const machine = machineInfo();
  const all = machine.kernels.threads;
  // One thread shows the kernels alone (a loaded machine preempts a pool of
  // spinning threads more than a single one); all threads, the op as used.
  const out = [1, all]
    .filter((t, i, list) => list.indexOf(t) === i)
    .flatMap((threads) => {
      setKernelThreads(threads);
      return benchCases(machine, threads);
    });
  setKernelThreads(all);
  return out;
}

function benchCases(machine: ReturnType<typeof machineInfo>, threads: number) {
  const random = rng(1);
  const { blas, isa } = machine.kernels;
  // Every row says where it was measured: the figures differ by CPU, path and BLAS.
  const where = { cpu: machine.cpu, flags: machine.flags.join(" "), isa, openblas: blas !== null, threads };
  return CASES.map(({ use, product, shape }) => {
    const [rows, dIn, dOut] = shape;
    progress(`gemm ${use} ${product} [${rows}, ${dIn}, ${dOut}], ${threads} thread(s)`);
    // As gemm(m, n, k, a, b, …) with its transposes: forward [rows, dOut] = x[rows, dIn] · w[dOut, dIn]ᵀ,
    // input gradient [rows, dIn] = dy[rows, dOut] · w, weight gradient [dOut, dIn] = dyᵀ · x.
    const [m, n, k, transA, transB] =
      product === "x·Wᵀ"
        ? [rows, dOut, dIn, false, true]
        : product === "dy·W"
          ? [rows, dIn, dOut, false, false]
          : [dOut, dIn, rows, true, false];
    const a = randomF32(m * k, random);
    const b = randomF32(k * n, random);
    const c = new Float32Array(m * n);
    const run = (backend: GemmBackend) => () => gemm(m, n, k, a, b, c, { transA, transB, backend });
    let ours: "packed" | GemmBackend = "own";
    let oursRun = run("own");
    if (use === "sample") {
      const w = packWeight(b, n, k);
      ours = "packed";
      oursRun = () => linearPacked(a, w, c, m);
    }
    const sides: Record<string, () => void> = { ours: oursRun, auto: run("auto") };
    if (blas) sides.blas = run("blas");
    const samples = interleavedMs(sides, { minRounds: 9 });
    const gflops = (side: string) => round((2 * m * n * k) / (sideMedian(samples, side) * 1e6), 1);
    return {
      use,
      product,
      shape,
      ...where,
      ours,
      ours_gflops: gflops("ours"),
      auto_gflops: gflops("auto"),
      blas_gflops: blas ? gflops("blas") : null,
      // Speed ratios (> 1: ours faster), medians of per-round time ratios.
      ours_over_blas: blas ? round(pairedRatio(samples, "blas", "ours"), 3) : null,
      ours_over_auto: round(pairedRatio(samples, "auto", "ours"), 3),
      rounds: samples.ours?.length ?? 0,
    };
  });
}
