// Side by side with llama.cpp (issue #5): the sampling benchmark's random
// weights written as an f32 GGUF (or, with --dtype=bf16, held and written in
// bf16), run by node-llama-cpp's prebuilt CPU build on the same number of threads. Batch-1 decode and 512-token prefill are measured
// the same way for both engines, and logits are compared first: a figure for a
// model llama.cpp computes differently would mean nothing.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { kernelInfo, linear } from "@opentinker/kernels";
import { LocalStore } from "@opentinker/store";
import { type BaseModel, loadBaseModel } from "../src/base-model.ts";
import { convertModelWeights, type ModelConfig, type WeightDtype } from "../src/model/index.ts";
import { Arena } from "../src/nn/arena.ts";
import { forward } from "../src/nn/transformer.ts";
import { frozenParams } from "../src/policy/frozen.ts";
import { PagedKv } from "../src/sampler/paged-model.ts";
import { DEFAULT_BLOCK_SIZE, Sampler } from "../src/sampler/sampler.ts";
import { InMemorySnapshotRegistry } from "../src/snapshots/registry.ts";
import {
  parameterCount,
  QWEN25_05B_SHAPE,
  randomBaseModel,
  SMALL_10M_SHAPE,
} from "../src/testing/random-model.ts";
import { TINY_MODEL, writeTinyModel } from "../src/testing/tiny-model.ts";
import { pack } from "../src/trainer/batching.ts";
import { writeHfDirAsGguf, writeModelGguf } from "./gguf-model.ts";
import { type Llama, type LlamaContextSequence, loadLlamaCpp, NODE_LLAMA_CPP_VERSION } from "./llama-cpp.ts";
import {
  contextTokens,
  llamaGenerate,
  llamaGreedy,
  llamaLogits,
  PREFILL,
  withContext,
  withModel,
} from "./llama-session.ts";
import { DECODE, decodeRate, prompt, timed } from "./sampling.ts";
import { median, progress, round } from "./timing.ts";

/**
 * f32 on both sides, flash attention off: logits agree to ~1e-6, far below 1e-3.
 * bf16 weights: ours widen them and keep activations in f32, llama.cpp rounds the
 * activations to bf16 for its bf16 dot products, so logits differ by that rounding
 * (and greedy tokens may part where two logits are that close).
 */
const LOGIT_TOLERANCE: Record<WeightDtype, number> = { f32: 1e-3, bf16: 5e-2 };
const CHECK_PROMPT = 16;
const CHECK_GREEDY = 8;

interface Rate {
  median: number;
  best: number;
  runs: number[];
}

function rate(runs: number[]): Rate {
  return {
    median: round(median(runs), 1),
    best: round(Math.max(...runs), 1),
    runs: runs.map((r) => round(r, 1)),
  };
}

/** Our logits [positions from..T-1, V] by the training forward (the sampler agrees with it within 1e-4). */
function ourLogits(base: BaseModel, tokens: readonly number[], from: number): Float32Array {
  const { hiddenSize: H, vocabSize: V } = base.config;
  const batch = pack([{ tokens: Int32Array.from(tokens), targets: new Int32Array(tokens.length) }]);
  const arena = new Arena(base.backend);
  try {
    const hidden = base.backend.download(forward(frozenParams(base), batch, arena).tape.hidden);
    const rows = tokens.length - from;
    const logits = new Float32Array(rows * V);
    linear(hidden.subarray(from * H), base.weights.lmHead, logits, rows, H, V);
    return logits;
  } finally {
    arena.release();
  }
}

function argmax(logits: Float32Array, row: number, vocab: number): number {
  let best = 0;
  for (let v = 1; v < vocab; v++)
    if ((logits[row * vocab + v] as number) > (logits[row * vocab + best] as number)) best = v;
  return best;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs((a[i] as number) - (b[i] as number)));
  return max;
}

/** Logits of both engines on one sequence (a prompt and our greedy continuation) and their greedy tokens. */
async function compare(
  base: BaseModel,
  dtype: WeightDtype,
  sequence: LlamaContextSequence,
  oursGreedy: number[],
  input: number[],
) {
  const V = base.config.vocabSize;
  const tokens = [...input, ...oursGreedy.slice(0, -1)];
  const from = input.length - 1;
  const ours = ourLogits(base, tokens, from);
  const theirs = await llamaLogits(sequence, tokens, from, V);
  const theirGreedy = await llamaGreedy(sequence, input, oursGreedy.length);
  const diff = maxAbsDiff(ours, theirs);
  const agree = oursGreedy.every((t, i) => t === theirGreedy[i]);
  return {
    positions: tokens.length - from,
    logits_max_abs_diff: Number(diff.toPrecision(3)),
    ours_greedy: oursGreedy,
    llama_greedy: theirGreedy,
    // Our logits' argmax is the sampler's greedy token (its paged path against the training forward).
    ours_argmax_is_greedy: oursGreedy.every((t, i) => argmax(ours, i, V) === t),
    greedy_tokens_agree: agree,
    ok: diff <= LOGIT_TOLERANCE[dtype] && (agree || dtype === "bf16"),
  };
}

/** A sampler of `base`; its KV cache holds `kvTokens` tokens (default: 1 GiB's worth). */
function newSampler(base: BaseModel, dir: string, kvTokens?: number) {
  const blockBytes = PagedKv.bytesPerBlock(base.config, DEFAULT_BLOCK_SIZE);
  return new Sampler({
    base,
    store: new LocalStore(dir),
    registry: new InMemorySnapshotRegistry(),
    kvCacheBytes: kvTokens === undefined ? 2 ** 30 : Math.ceil(kvTokens / DEFAULT_BLOCK_SIZE) * blockBytes,
    policyBytes: 2 ** 30,
    maxTokensPerStep: PREFILL,
  });
}

/**
 * The conversion on small models that exercise what the benchmark shapes do not:
 * `llama` (q/k permuted for llama.cpp's RoPE) with q/k/v biases and an untied
 * output, and `qwen2` with non-zero biases, both read back from an HF directory.
 */
async function conversionCheck(llama: Llama, dir: string, threads: number) {
  const out = [];
  for (const architecture of ["llama", "qwen2"] as const) {
    const model = await writeTinyModel(path.join(dir, `tiny-${architecture}`), {
      ...TINY_MODEL,
      architecture,
      numHeads: 4,
      numKvHeads: 2,
      numLayers: 2,
      tieWordEmbeddings: architecture === "qwen2",
      attentionBias: true,
      seed: 7,
    });
    const gguf = path.join(dir, `tiny-${architecture}.gguf`);
    await writeHfDirAsGguf(model.dir, gguf);
    const base = await loadBaseModel(model.dir);
    const input = prompt(base.config.vocabSize, CHECK_PROMPT, 11);
    const greedy = (
      await newSampler(base, path.join(dir, `s-${architecture}`)).sample("base", input, 1, {
        maxTokens: CHECK_GREEDY,
        temperature: 0,
      })
    ).sequences[0]?.tokens as number[];
    const check = await withModel(llama, gguf, (model) =>
      withContext(model, base.config, threads, false, (sequence) =>
        compare(base, "f32", sequence, greedy, input),
      ),
    );
    out.push({ model: `tiny ${architecture}`, ...check });
  }
  return out;
}

interface Run {
  decode: number;
  prefill: number;
}

/**
 * One measurement of ours: batch-1 decode as the sampling benchmark does it, and
 * a 512-token prefill on `server`, one sampler kept for the whole bench as
 * llama.cpp keeps its context (a fresh one would pay for first touching its
 * memory every time, which a running service does once). Its KV cache holds as
 * many tokens as llama.cpp's context: with 1 GiB, every new prompt was written
 * into blocks never touched before, a page fault per 4 KiB, where a service
 * that has run a while, and llama.cpp, reuse warm memory. Each run's prompt is
 * new from its first token, so nothing is served from the prefix cache.
 */
async function oursRun(base: BaseModel, dir: string, r: number, server: Sampler): Promise<Run> {
  const V = base.config.vocabSize;
  const decode = await decodeRate(newSampler(base, dir), ["base"], V);
  const seconds = await timed(() => server.sample("base", prompt(V, PREFILL, 2 + r), 1, { maxTokens: 1 }));
  return { decode, prefill: PREFILL / seconds };
}

/** The same for llama.cpp: decode = (time of 1 + DECODE tokens − time of 1) after the same 16-token prompt. */
async function llamaRun(sequence: LlamaContextSequence, vocab: number, r: number): Promise<Run> {
  const input = prompt(vocab, 16, 0);
  await llamaGenerate(sequence, input, 2, r); // warm up, as decodeRate does
  let one = 0;
  let many = 0;
  const tOne = await timed(async () => {
    one = await llamaGenerate(sequence, input, 1, r);
  });
  const tMany = await timed(async () => {
    many = await llamaGenerate(sequence, input, 1 + DECODE, r);
  });
  const long = prompt(vocab, PREFILL, 2 + r);
  const tLong = await timed(() => llamaGenerate(sequence, long, 1, r));
  return { decode: (many - one) / Math.max(1e-9, tMany - tOne), prefill: PREFILL / tLong };
}

/**
 * Collects garbage before a run (the bench runs with --expose-gc): each of our
 * runs drops samplers with a 1 GiB KV cache, and V8 freeing them must not land
 * in the next engine's timed run.
 */
function settled<T>(run: () => Promise<T>): Promise<T> {
  (globalThis as { gc?: () => void }).gc?.();
  return run();
}

const rates = (runs: Run[]) => ({
  decode: rate(runs.map((r) => r.decode)),
  prefill: rate(runs.map((r) => r.prefill)),
});

async function benchModel(
  llama: Llama,
  name: string,
  config: ModelConfig,
  dir: string,
  threads: number,
  repeats: number,
  dtype: WeightDtype,
) {
  progress(`llama: building ${name} (${(parameterCount(config) / 1e6).toFixed(1)}M parameters, ${dtype})`);
  const f32 = randomBaseModel(config, 3); // the sampling benchmark's weights
  // bf16: the same weights rounded once, held so by us and written so for llama.cpp.
  const base = dtype === "bf16" ? { ...f32, weights: convertModelWeights(config, f32.weights, "bf16") } : f32;
  await mkdir(dir, { recursive: true });
  const gguf = path.join(dir, "model.gguf");
  const bytes = await writeModelGguf(gguf, config, base.weights, name);
  const input = prompt(config.vocabSize, CHECK_PROMPT, 11);
  const greedy = (
    await newSampler(base, dir).sample("base", input, 1, { maxTokens: CHECK_GREEDY, temperature: 0 })
  ).sequences[0]?.tokens as number[];
  progress(`llama: loading ${name} into llama.cpp`);
  return withModel(llama, gguf, (model) =>
    withContext(model, config, threads, false, (exact) =>
      withContext(model, config, threads, "auto", async (flash) => {
        const check = await compare(base, dtype, exact, greedy, input);
        if (!check.ok)
          progress(`llama: WARNING ${name}: llama.cpp computes a different model: ${JSON.stringify(check)}`);
        const flashCheck = await compare(base, dtype, flash, greedy, input);
        const loadStart = loadavg().map((l) => round(l, 2));
        // Interleaved, so a change in the machine's load hits all three alike.
        const runs = { ours: [] as Run[], exact: [] as Run[], flash: [] as Run[] };
        const server = newSampler(base, dir, contextTokens(config));
        await server.sample("base", prompt(config.vocabSize, 64, 1), 1, { maxTokens: 1 }); // warm up
        for (let r = 0; r < repeats; r++) {
          progress(`llama: ${name} run ${r + 1}/${repeats}`);
          runs.ours.push(await settled(() => oursRun(base, dir, r, server)));
          runs.exact.push(await settled(() => llamaRun(exact, config.vocabSize, r)));
          runs.flash.push(await settled(() => llamaRun(flash, config.vocabSize, r)));
        }
        const ours = rates(runs.ours);
        const theirs = rates(runs.exact);
        const theirsFlash = rates(runs.flash);
        // Ours over llama.cpp's faster setting, by medians and by best runs (the shared machine's noise
        // only ever slows a run down, so the best runs are the closer estimate of each engine alone).
        const ratio = (pick: (r: typeof ours) => Rate) => ({
          median: round(pick(ours).median / Math.max(pick(theirs).median, pick(theirsFlash).median), 2),
          best: round(pick(ours).best / Math.max(pick(theirs).best, pick(theirsFlash).best), 2),
        });
        return {
          model: name,
          weights: dtype,
          gguf_bytes: bytes,
          load_average_1_5_15: { start: loadStart, end: loadavg().map((l) => round(l, 2)) },
          check,
          flash_attention_logits_max_abs_diff: flashCheck.logits_max_abs_diff,
          batch1_decode_tokens_per_s: {
            ours: ours.decode,
            llama_cpp: theirs.decode,
            llama_cpp_flash_attention: theirsFlash.decode,
            ours_over_llama_cpp: ratio((r) => r.decode),
          },
          prefill_512_tokens_per_s: {
            ours: ours.prefill,
            llama_cpp: theirs.prefill,
            llama_cpp_flash_attention: theirsFlash.prefill,
            ours_over_llama_cpp: ratio((r) => r.prefill),
          },
        };
      }),
    ),
  );
}

/** `repeats` interleaved runs of each engine; the machine is shared, so the best run is reported beside the median. */
export async function benchLlama(only?: string, repeats = 3, dtype: WeightDtype = "f32") {
  if (!Number.isInteger(repeats) || repeats < 1)
    throw new RangeError(`--repeats must be ≥ 1, got ${repeats}`);
  const threads = kernelInfo().threads;
  let llama: Llama;
  try {
    llama = await loadLlamaCpp(threads);
  } catch (error) {
    return {
      skipped: `node-llama-cpp@${NODE_LLAMA_CPP_VERSION} is unavailable: ${(error as Error).message}`,
    };
  }
  const dir = await mkdtemp(path.join(tmpdir(), "ot-bench-llama-"));
  try {
    const reference = {
      node_llama_cpp: NODE_LLAMA_CPP_VERSION,
      llama_cpp: llama.llamaCppRelease.release,
      build: llama.buildType,
      system_info: llama.systemInfo.trim(),
      threads,
      kv_cache: "f32",
    };
    progress("llama: conversion check on tiny llama / qwen2 models");
    const conversion = await conversionCheck(llama, dir, threads);
    const models = [];
    if (!only || only === "small")
      models.push(
        await benchModel(llama, "10M", SMALL_10M_SHAPE, path.join(dir, "small"), threads, repeats, dtype),
      );
    if (!only || only === "qwen")
      models.push(
        await benchModel(
          llama,
          "Qwen2.5-0.5B-shaped",
          QWEN25_05B_SHAPE,
          path.join(dir, "qwen"),
          threads,
          repeats,
          dtype,
        ),
      );
    return { reference, conversion, models };
  } finally {
    await llama.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}
