// bf16 against f32 base weights (issue #23): batch-1 decode of the sampler on the
// Qwen2.5-0.5B shape, and the decode-sized matmuls alone, the two dtypes taking
// turns run after run so both see the same machine load. Each ratio is the
// median of the per-round ratios.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { linearPacked, packWeight, type WeightArray } from "@opentinker/kernels";

type PackedWeight = ReturnType<typeof packWeight>;

import { LocalStore } from "@opentinker/store";
import type { BaseModel } from "../src/base-model.ts";
import { convertModelWeights, type ModelConfig, type WeightDtype } from "../src/model/index.ts";
import { Sampler } from "../src/sampler/sampler.ts";
import { InMemorySnapshotRegistry } from "../src/snapshots/registry.ts";
import { parameterCount, QWEN25_05B_SHAPE, randomBaseModel } from "../src/testing/random-model.ts";
import { decodeRate } from "./sampling.ts";
import { median, progress, round } from "./timing.ts";

const DTYPES: readonly WeightDtype[] = ["f32", "bf16"];

const packs = new Map<WeightArray, PackedWeight>();
/** The weight packed once, as the sampler holds it (f32 or bf16 panels). */
function packed(w: WeightArray, dOut: number, dIn: number): PackedWeight {
  const known = packs.get(w);
  if (known) return known;
  const made = packWeight(w, dOut, dIn);
  packs.set(w, made);
  return made;
}

/** Median seconds of `reps` calls of `run`, after a warm-up call. */
function seconds(run: () => void, reps: number): number {
  run();
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    run();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

/**
 * One decode step's x·Wᵀ ([1, dIn]·[dOut, dIn]ᵀ) per dtype, interleaved, as the
 * sampler multiplies: over the weight packed once (its default batch-invariant
 * path), in f32 or bf16 panels. One weight per shape, called repeatedly: the
 * smaller ones may stay in this CPU's cache, the 151,936-row lm_head cannot.
 */
function matmuls(base: Record<WeightDtype, BaseModel>, rounds: number) {
  const c = base.f32.config;
  const shapes: { name: string; dIn: number; dOut: number; pick: (b: BaseModel) => WeightArray }[] = [
    {
      name: "gate [896 → 4864]",
      dIn: c.hiddenSize,
      dOut: c.intermediateSize,
      pick: (b) => b.weights.layers[0]?.gateProj as WeightArray,
    },
    {
      name: "down [4864 → 896]",
      dIn: c.intermediateSize,
      dOut: c.hiddenSize,
      pick: (b) => b.weights.layers[0]?.downProj as WeightArray,
    },
    { name: "lm_head [896 → 151936]", dIn: c.hiddenSize, dOut: c.vocabSize, pick: (b) => b.weights.lmHead },
  ];
  return shapes.map(({ name, dIn, dOut, pick }) => {
    const x = Float32Array.from({ length: dIn }, (_, i) => Math.sin(i));
    const y = new Float32Array(dOut);
    const runs: Record<WeightDtype, number[]> = { f32: [], bf16: [] };
    for (let r = 0; r < rounds; r++) {
      for (const dtype of DTYPES) {
        const w = pick(base[dtype]);
        const p = packed(w, dOut, dIn);
        runs[dtype].push(seconds(() => linearPacked(x, p, y, 1), 5));
      }
    }
    const ratios = runs.f32.map((t, i) => t / (runs.bf16[i] as number));
    return {
      shape: name,
      f32_ms: round(median(runs.f32) * 1000, 3),
      bf16_ms: round(median(runs.bf16) * 1000, 3),
      bf16_speedup: round(median(ratios), 2),
    };
  });
}

async function decode(base: Record<WeightDtype, BaseModel>, rounds: number) {
  const dir = await mkdtemp(path.join(tmpdir(), "ot-bench-bf16-"));
  try {
    const store = new LocalStore(dir);
    const registry = new InMemorySnapshotRegistry();
    const samplers = Object.fromEntries(
      DTYPES.map((d) => [
        d,
        new Sampler({ base: base[d], store, registry, kvCacheBytes: 2 ** 30, maxTokensPerStep: 512 }),
      ]),
    ) as Record<WeightDtype, Sampler>;
    const runs: Record<WeightDtype, number[]> = { f32: [], bf16: [] };
    for (let r = 0; r < rounds; r++) {
      for (const dtype of DTYPES) {
        runs[dtype].push(await decodeRate(samplers[dtype], ["base"], base.f32.config.vocabSize));
        progress(
          `bf16: decode round ${r + 1}/${rounds} ${dtype} ${round(runs[dtype].at(-1) as number, 1)} tok/s`,
        );
      }
    }
    const ratios = runs.bf16.map((t, i) => t / (runs.f32[i] as number));
    return {
      f32_tokens_per_s: round(median(runs.f32), 1),
      bf16_tokens_per_s: round(median(runs.bf16), 1),
      bf16_speedup: round(median(ratios), 2),
      runs: { f32: runs.f32.map((v) => round(v, 1)), bf16: runs.bf16.map((v) => round(v, 1)) },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchWeightDtype(rounds = 5, config: ModelConfig = QWEN25_05B_SHAPE) {
  progress(
    `bf16: building the Qwen2.5-0.5B shape (${(parameterCount(config) / 1e6).toFixed(1)}M parameters)`,
  );
  const f32 = randomBaseModel(config, 3);
  // Converted once, as loading an f32 checkpoint with OPENTINKER_WEIGHT_DTYPE=bf16 does.
  const bf16: BaseModel = { ...f32, weights: convertModelWeights(config, f32.weights, "bf16") };
  const base = { f32, bf16 };
  progress("bf16: matmuls");
  const perMatmul = matmuls(base, rounds);
  progress("bf16: batch-1 decode");
  return {
    model: "Qwen2.5-0.5B-shaped",
    rounds,
    decode_batch1: await decode(base, rounds),
    matmul_batch1: perMatmul,
  };
}
