// Training throughput: forwardBackward + optimStep, tokens per second.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { kernelInfo } from "@opentinker/kernels";
import { buildSftDatum, type Datum } from "@opentinker/protocol";
import type { ModelConfig } from "../src/model/index.ts";
import { createFullPolicy } from "../src/policy/full-policy.ts";
import { createLoraPolicy } from "../src/policy/lora-policy.ts";
import type { Policy } from "../src/policy/policy.ts";
import { Rng } from "../src/rng.ts";
import {
  parameterCount,
  QWEN25_05B_SHAPE,
  randomBaseModel,
  SMALL_10M_SHAPE,
} from "../src/testing/random-model.ts";
import { Trainer } from "../src/trainer/trainer.ts";
import { median, progress, round } from "./timing.ts";

const BATCH = 8;
const SEQ = 256;

function batch(vocab: number, seed: number): Datum[] {
  const rng = new Rng(seed);
  return Array.from({ length: BATCH }, () => {
    const tokens = Array.from({ length: SEQ + 1 }, () => Math.floor(rng.next() * vocab));
    return buildSftDatum({ sequence: tokens, weights: tokens.map((_, i) => (i === 0 ? 0 : 1)) });
  });
}

function measure(
  policy: Policy,
  data: Datum[],
  steps: number,
): { tokensPerSecond: number; stepSeconds: number } {
  const trainer = new Trainer(policy, { maxTokensPerPass: BATCH * SEQ });
  const times: number[] = [];
  for (let i = 0; i <= steps; i++) {
    const t0 = performance.now();
    trainer.forwardBackward(data, "cross_entropy");
    trainer.optimStep({ learningRate: 1e-5 });
    if (i > 0) times.push((performance.now() - t0) / 1000); // the first step warms up
  }
  const stepSeconds = median(times);
  return { tokensPerSecond: round((BATCH * SEQ) / stepSeconds, 1), stepSeconds: round(stepSeconds, 3) };
}

const TORCH_SCRIPT = fileURLToPath(new URL("./torch_train.py", import.meta.url));
const SYSTEM_PYTHON = "/usr/bin/python3";

/** The same model, batch and AdamW in PyTorch (Debian's python3-torch), when installed. */
function torchReference(shape: "small" | "qwen", kind: "lora" | "full", steps: number) {
  if (!existsSync(SYSTEM_PYTHON)) return { skipped: `${SYSTEM_PYTHON} not found` };
  const probe = spawnSync(SYSTEM_PYTHON, ["-c", "import torch"], { encoding: "utf8" });
  if (probe.status !== 0)
    return { skipped: "python3-torch is not installed (apt-get install python3-torch)" };
  progress(`train: PyTorch ${shape} ${kind}`);
  const run = spawnSync(
    SYSTEM_PYTHON,
    [TORCH_SCRIPT, shape, kind, String(steps), String(kernelInfo().threads)],
    {
      encoding: "utf8",
    },
  );
  if (run.status !== 0)
    return { skipped: `the PyTorch script failed: ${run.stderr.trim().split("\n").pop()}` };
  return JSON.parse(run.stdout.trim().split("\n").pop() as string) as Record<string, unknown>;
}

function benchModel(name: string, shape: "small" | "qwen", config: ModelConfig, steps: number) {
  progress(`train: building ${name} (${(parameterCount(config) / 1e6).toFixed(1)}M parameters)`);
  const base = randomBaseModel(config, 1);
  const data = batch(config.vocabSize, 2);
  progress(`train: ${name} LoRA r=16`);
  const lora = measure(
    createLoraPolicy(base, {
      rank: 16,
      alpha: 32,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: false,
      seed: 1,
    }),
    data,
    steps,
  );
  progress(`train: ${name} full-parameter`);
  const full = measure(createFullPolicy(base), data, steps);
  // Our policies are garbage now: free them before PyTorch builds its own copy.
  (globalThis as { gc?: () => void }).gc?.();
  const torchLora = torchReference(shape, "lora", steps);
  const torchFull = torchReference(shape, "full", steps);
  const ratio = (ours: number, ref: Record<string, unknown>) =>
    typeof ref.tokensPerSecond === "number" ? round(ours / ref.tokensPerSecond, 2) : null;
  return {
    model: name,
    parameters: parameterCount(config),
    batch: [BATCH, SEQ],
    lora_r16_all_linear: { ...lora, torch: torchLora, over_torch: ratio(lora.tokensPerSecond, torchLora) },
    full_parameter: { ...full, torch: torchFull, over_torch: ratio(full.tokensPerSecond, torchFull) },
  };
}

export function benchTrain(only?: string) {
  const out = [];
  if (!only || only === "small") out.push(benchModel("10M", "small", SMALL_10M_SHAPE, 5));
  if (!only || only === "qwen") out.push(benchModel("Qwen2.5-0.5B-shaped", "qwen", QWEN25_05B_SHAPE, 2));
  return out;
}
