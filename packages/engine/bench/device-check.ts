// The engine's device check (issue 47; scripts/device-check.sh runs it): on a
// CUDA device, first that the engine there gives the CPU's logprobs (f32 within
// 1e-4, bf16 weights within 2e-2), then one JSON line of figures: the device's
// copy bandwidth, batch-1 decode as a fraction of the HBM bound (weight bytes ×
// tokens/s ÷ bandwidth), 64 sequences over 64 adapters against batch 1 and
// against the same batch with no adapters, and LoRA training tokens/s
// (8 × 1024 tokens, rank 16 on every linear).
//
//   node --import tsx packages/engine/bench/device-check.ts --device cuda:0
//   … --device cuda-emulated --quick      (the dry run CI does: tiny shapes)
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Backend, CpuBackend, parseDeviceChoice, selectBackend } from "@opentinker/kernels";
import { buildSftDatum } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { type BaseModel, setDefaultBackend } from "../src/base-model.ts";
import { convertModelWeights, type ModelConfig } from "../src/model/index.ts";
import { Arena } from "../src/nn/arena.ts";
import { forward } from "../src/nn/transformer.ts";
import { frozenParams } from "../src/policy/frozen.ts";
import { createLoraPolicy } from "../src/policy/lora-policy.ts";
import { Rng } from "../src/rng.ts";
import { Sampler } from "../src/sampler/sampler.ts";
import { InMemorySnapshotRegistry } from "../src/snapshots/registry.ts";
import { parameterCount, QWEN25_05B_SHAPE, randomBaseModel } from "../src/testing/random-model.ts";
import { pack } from "../src/trainer/batching.ts";
import { Trainer } from "../src/trainer/trainer.ts";
import { adapters, decodeRate } from "./sampling.ts";
import { median, progress, round } from "./timing.ts";

/** Llama-3-8B's layer and vocabulary shapes, 4 of its 32 layers (the HBM bound is per byte). */
export const LLAMA3_8B_4_LAYERS: ModelConfig = {
  ...QWEN25_05B_SHAPE,
  architecture: "llama",
  hiddenSize: 4096,
  intermediateSize: 14336,
  numLayers: 4,
  numHeads: 32,
  numKvHeads: 8,
  headDim: 128,
  vocabSize: 128256,
  ropeTheta: 500000,
  tieWordEmbeddings: false,
  attentionBias: false,
  eosTokenIds: [128001],
};

/** The dry run's model: every op of a real one, small enough for the emulated device. */
const TINY: ModelConfig = {
  ...QWEN25_05B_SHAPE,
  hiddenSize: 64,
  intermediateSize: 128,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  vocabSize: 512,
  eosTokenIds: [0],
};

interface Options {
  device: string;
  quick: boolean;
}

function parseArgs(argv: string[]): Options {
  const at = argv.indexOf("--device");
  return { device: at >= 0 ? (argv[at + 1] ?? "") : "cuda:0", quick: argv.includes("--quick") };
}

/** A model on `backend` (the same weights for the same seed), in f32 or with bf16 weights. */
function modelOn(backend: Backend, config: ModelConfig, dtype: "f32" | "bf16"): BaseModel {
  setDefaultBackend(backend);
  const base = randomBaseModel(config, 3);
  return dtype === "f32" ? base : { ...base, weights: convertModelWeights(config, base.weights, "bf16") };
}

/** The training forward's logprobs of a few random sequences. */
function logprobs(base: BaseModel): Float32Array {
  const rng = new Rng(9);
  const seqs = [17, 40, 5].map((n) =>
    Array.from({ length: n + 1 }, () => Math.floor(rng.next() * base.config.vocabSize)),
  );
  const batch = pack(
    seqs.map((s) => ({ tokens: Int32Array.from(s.slice(0, -1)), targets: Int32Array.from(s.slice(1)) })),
  );
  const params = frozenParams(base);
  const arena = new Arena(params.backend);
  try {
    return Float32Array.from(params.backend.download(forward(params, batch, arena).logprobs));
  } finally {
    arena.release();
  }
}

/** The device's logprobs against the CPU's, per weight dtype: the largest |difference| and whether it is within bounds. */
function agreement(device: Backend, config: ModelConfig) {
  const bounds = { f32: 1e-4, bf16: 2e-2 } as const;
  const out: Record<string, { maxAbsDiff: number; bound: number; ok: boolean }> = {};
  for (const dtype of ["f32", "bf16"] as const) {
    const want = logprobs(modelOn(new CpuBackend(), config, dtype));
    const got = logprobs(modelOn(device, config, dtype));
    let worst = 0;
    for (let i = 0; i < want.length; i++)
      worst = Math.max(worst, Math.abs((got[i] as number) - (want[i] as number)));
    out[dtype] = { maxAbsDiff: worst, bound: bounds[dtype], ok: worst <= bounds[dtype] };
  }
  return out;
}

/** Device copy bandwidth, bytes/s: a buffer copied device to device (read + write) several times. */
function bandwidth(be: Backend, mib: number): number {
  const n = (mib << 20) / 4;
  const a = be.alloc("f32", [n]);
  const b = be.alloc("f32", [n]);
  try {
    be.copy(b, a);
    be.download(be.view(b, 0, [1]));
    const reps = 10;
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) be.copy(b, a);
    be.download(be.view(b, 0, [1])); // waits for the copies
    return (2 * n * 4 * reps) / ((performance.now() - t0) / 1000);
  } finally {
    be.free(a);
    be.free(b);
  }
}

async function decodeFigures(base: BaseModel, sequences: number, bytesPerSecond: number) {
  const dir = await mkdtemp(path.join(tmpdir(), "ot-device-check-"));
  try {
    const store = new LocalStore(dir);
    const registry = new InMemorySnapshotRegistry();
    const handles = await adapters(base, sequences, store, registry);
    const sampler = () =>
      new Sampler({
        base,
        store,
        registry,
        kvCacheBytes: 2 ** 30,
        policyBytes: 4 * 2 ** 30,
        maxTokensPerStep: 512,
      });
    const V = base.config.vocabSize;
    const batch1 = await decodeRate(sampler(), [handles[0] as string], V);
    const adapted = await decodeRate(sampler(), handles, V);
    const plain = await decodeRate(
      sampler(),
      handles.map(() => "base"),
      V,
    );
    const weightBytes = parameterCount(base.config) * 2; // bf16
    return {
      batch1TokensPerS: round(batch1, 1),
      batch1FractionOfHbmBound: round((weightBytes * batch1) / bytesPerSecond, 3),
      [`adapters${sequences}TokensPerS`]: round(adapted, 1),
      [`adapters${sequences}OverBatch1`]: round(adapted / batch1, 2),
      [`adapters${sequences}OverNoAdapters`]: round(adapted / plain, 3),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function trainingFigures(base: BaseModel, sequences: number, length: number, rounds: number) {
  const rng = new Rng(5);
  const data = Array.from({ length: sequences }, () => {
    const tokens = Array.from({ length: length + 1 }, () => Math.floor(rng.next() * base.config.vocabSize));
    return buildSftDatum({ sequence: tokens, weights: tokens.map((_, i) => (i === 0 ? 0 : 1)) });
  });
  const policy = createLoraPolicy(base, {
    rank: 16,
    alpha: 32,
    trainAttn: true,
    trainMlp: true,
    trainUnembed: true,
    seed: 1,
  });
  const trainer = new Trainer(policy, { maxTokensPerPass: sequences * length });
  const step = () => {
    const t0 = performance.now();
    trainer.forwardBackward(data, "cross_entropy");
    trainer.optimStep({ learningRate: 1e-5 });
    return (performance.now() - t0) / 1000;
  };
  step();
  const seconds = median(Array.from({ length: rounds }, step));
  return { batch: [sequences, length], loraR16TokensPerS: round((sequences * length) / seconds, 1) };
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const { backend } = selectBackend(parseDeviceChoice(options.device, "--device"));
  const report: Record<string, unknown> = {
    device: backend.device.name,
    description: backend.device.description,
  };
  progress(`device-check: ${backend.device.name} (${backend.device.description})`);
  report.agreement = agreement(backend, TINY);
  const bytesPerSecond = bandwidth(backend, options.quick ? 16 : 1024);
  report.copyGBps = round(bytesPerSecond / 1e9, 1);
  const shapes: [string, ModelConfig][] = options.quick
    ? [["tiny", TINY]]
    : [
        ["Qwen2.5-0.5B-shaped", QWEN25_05B_SHAPE],
        ["Llama-3-8B-shaped (4 of 32 layers)", LLAMA3_8B_4_LAYERS],
      ];
  const models: Record<string, unknown>[] = [];
  for (const [name, config] of shapes) {
    progress(`device-check: ${name}`);
    const base = modelOn(backend, config, "bf16");
    models.push({
      model: name,
      parameters: parameterCount(config),
      decode: await decodeFigures(base, options.quick ? 4 : 64, bytesPerSecond),
      training: trainingFigures(
        base,
        options.quick ? 2 : 8,
        options.quick ? 16 : 1024,
        options.quick ? 1 : 3,
      ),
    });
  }
  report.models = models;
  const ok = Object.values(report.agreement as Record<string, { ok: boolean }>).every((a) => a.ok);
  report.ok = ok;
  console.log(JSON.stringify(report));
  process.exitCode = ok ? 0 : 1;
}

await main();
