// Training throughput: forwardBackward + optimStep, tokens per second, side by
// side with PyTorch (when installed) in interleaved steps.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { freemem } from "node:os";
import { createInterface } from "node:readline";
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

const TORCH_SCRIPT = fileURLToPath(new URL("./torch_train.py", import.meta.url));
const SYSTEM_PYTHON = "/usr/bin/python3";

/** PyTorch's side of the comparison (Debian's python3-torch), kept running so its steps interleave with ours. */
interface TorchPeer {
  /** Its own configuration: version, threads, CPU capability, build and the BLAS it loaded. */
  config: Record<string, unknown>;
  /** Seconds of one forward + backward + AdamW step. */
  step(): Promise<number>;
  close(): void;
}

async function startTorch(
  shape: "small" | "qwen",
  kind: "lora" | "full",
): Promise<TorchPeer | { skipped: string }> {
  if (!existsSync(SYSTEM_PYTHON)) return { skipped: `${SYSTEM_PYTHON} not found` };
  const probe = spawnSync(SYSTEM_PYTHON, ["-c", "import torch"], { encoding: "utf8" });
  if (probe.status !== 0)
    return { skipped: "python3-torch is not installed (apt-get install python3-torch)" };
  progress(`train: starting PyTorch ${shape} ${kind}`);
  const child = spawn(SYSTEM_PYTHON, [TORCH_SCRIPT, shape, kind, String(kernelInfo().threads)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const line = await lines.next();
    if (line.done) throw new Error(`the PyTorch script exited: ${stderr.trim().split("\n").pop()}`);
    return JSON.parse(line.value) as Record<string, unknown>;
  };
  try {
    const ready = await next();
    return {
      config: ready.config as Record<string, unknown>,
      step: async () => {
        child.stdin.write("step\n");
        return Number((await next()).stepSeconds);
      },
      close: () => child.stdin.end(),
    };
  } catch (error) {
    child.kill();
    return { skipped: (error as Error).message };
  }
}

/**
 * Our training steps and PyTorch's, interleaved (ours, theirs, ours, …) after a
 * warm-up step of each, so a change in the shared machine's load hits both;
 * over_torch is the median of the per-round ratios.
 */
async function measure(
  policy: Policy,
  data: Datum[],
  rounds: number,
  torch: TorchPeer | { skipped: string },
) {
  const trainer = new Trainer(policy, { maxTokensPerPass: BATCH * SEQ });
  const ourStep = () => {
    const t0 = performance.now();
    trainer.forwardBackward(data, "cross_entropy");
    trainer.optimStep({ learningRate: 1e-5 });
    return (performance.now() - t0) / 1000;
  };
  const peer = "step" in torch ? torch : null;
  ourStep();
  const ours: number[] = [];
  const theirs: number[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      ours.push(ourStep());
      if (peer) theirs.push(await peer.step());
    }
  } finally {
    peer?.close();
  }
  const tokensPerSecond = (seconds: number) => round((BATCH * SEQ) / seconds, 1);
  return {
    rounds,
    tokensPerSecond: tokensPerSecond(median(ours)),
    stepSeconds: round(median(ours), 3),
    torch: peer
      ? {
          config: peer.config,
          tokensPerSecond: tokensPerSecond(median(theirs)),
          stepSeconds: round(median(theirs), 3),
        }
      : torch,
    over_torch: peer ? round(median(theirs.map((t, r) => t / (ours[r] as number))), 2) : null,
  };
}

/** Bytes a full-parameter copy takes with its gradients and AdamW moments (f32). */
const fullCopyBytes = (config: ModelConfig) => parameterCount(config) * 4 * 4;

async function benchModel(name: string, shape: "small" | "qwen", config: ModelConfig, rounds: number) {
  progress(`train: building ${name} (${(parameterCount(config) / 1e6).toFixed(1)}M parameters)`);
  const base = randomBaseModel(config, 1);
  const data = batch(config.vocabSize, 2);
  progress(`train: ${name} LoRA r=16, interleaved with PyTorch`);
  const loraPolicy = createLoraPolicy(base, {
    rank: 16,
    alpha: 32,
    trainAttn: true,
    trainMlp: true,
    trainUnembed: false,
    seed: 1,
  });
  const lora = await measure(loraPolicy, data, rounds, await startTorch(shape, "lora"));
  progress(`train: ${name} full-parameter, interleaved with PyTorch`);
  // Interleaving needs both full copies in memory at once; say so rather than compare runs apart in time.
  const fits = freemem() > 2.5 * fullCopyBytes(config);
  const fullTorch = fits
    ? await startTorch(shape, "full")
    : {
        skipped: `not interleaved: two full-parameter copies (${(fullCopyBytes(config) / 2 ** 30).toFixed(1)} GiB each with AdamW moments) do not fit in free memory`,
      };
  const full = await measure(createFullPolicy(base), data, rounds, fullTorch);
  return {
    model: name,
    parameters: parameterCount(config),
    batch: [BATCH, SEQ],
    lora_r16_all_linear: lora,
    full_parameter: full,
  };
}

export async function benchTrain(only?: string) {
  const out = [];
  if (!only || only === "small") out.push(await benchModel("10M", "small", SMALL_10M_SHAPE, 5));
  if (!only || only === "qwen")
    out.push(await benchModel("Qwen2.5-0.5B-shaped", "qwen", QWEN25_05B_SHAPE, 3));
  return out;
}
