import { isasUpTo, type KernelsIsa } from "../src/env.ts";
import { randomBf16 } from "../src/gemm-bf16.cases.ts";
import { linearPacked, loadNative, machineInfo, packWeight } from "../src/index.ts";
import type { PackedWeight } from "../src/ops/gemm.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { interleavedMs, pairedRatio, progress, round, sideMedian } from "./timing.ts";

// The sampler's product over a frozen bf16 weight packed once, y = x · Wᵀ, on
// every path this CPU has: AMX tiles (x split into three bf16 parts) against the
// AVX-512 and AVX2 FMA tiles (the weight widened as it loads). Qwen2.5-0.5B
// shapes, [rows, dIn, dOut]: decode steps and a 512-token prefill.
const SHAPES: [number, number, number][] = [
  [1, 896, 4864],
  [16, 896, 4864],
  [512, 896, 4864],
  [512, 4864, 896],
];

/**
 * Each path's side in interleaved rounds of one process: before each call the
 * bench switches the kernels' path (selectIsa, which a service calls once at
 * load) and runs it over the pack made on that path. Ratios are medians of
 * per-round time ratios against the best path.
 */
export function benchGemmBf16() {
  const machine = machineInfo();
  const native = loadNative();
  const best = machine.kernels.isa;
  const paths = isasUpTo(best).reverse(); // best first
  const random = rng(3);
  const where = { cpu: machine.cpu, flags: machine.flags.join(" "), threads: machine.kernels.threads };
  try {
    return SHAPES.map(([rows, dIn, dOut]) => {
      progress(`gemm-bf16 [${rows}, ${dIn}, ${dOut}] on ${paths.join(", ")}`);
      const w = randomBf16(dOut * dIn, random);
      const x = randomF32(rows * dIn, random);
      const y = new Float32Array(rows * dOut);
      const packs = new Map<KernelsIsa, PackedWeight>();
      for (const isa of paths) {
        native.selectIsa(isa);
        packs.set(isa, packWeight(w, dOut, dIn));
      }
      const sides = Object.fromEntries(
        paths.map((isa) => [
          isa,
          () => {
            native.selectIsa(isa);
            linearPacked(x, packs.get(isa) as PackedWeight, y, rows);
          },
        ]),
      ) as Record<KernelsIsa, () => void>;
      const samples = interleavedMs(sides, { minRounds: 9 });
      const ms = (isa: KernelsIsa) => sideMedian(samples, isa);
      return {
        shape: [rows, dIn, dOut],
        ...where,
        // f32-equivalent GFLOPS (2·m·n·k over the time) and the weight's bf16 bytes per second.
        gflops: Object.fromEntries(
          paths.map((isa) => [isa, round((2 * rows * dIn * dOut) / (ms(isa) * 1e6), 1)]),
        ),
        weight_gb_per_s: Object.fromEntries(
          paths.map((isa) => [isa, round((2 * dIn * dOut) / (ms(isa) * 1e6), 1)]),
        ),
        // > 1: the best path is faster than that one.
        best_over: Object.fromEntries(
          paths.slice(1).map((isa) => [isa, round(pairedRatio(samples, isa, paths[0] as KernelsIsa), 3)]),
        ),
        rounds: samples[paths[0] as KernelsIsa].length,
      };
    });
  } finally {
    if (best) native.selectIsa(best);
  }
}
