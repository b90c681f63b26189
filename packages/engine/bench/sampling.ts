// Sampler throughput: decode at batch 1 and 16 (over 16 adapters, and with no
// adapter), prefill of a 512-token prompt, and prefix sharing for a GRPO group,
// each measured in interleaved rounds.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { PromptLogprobsOptions } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import type { BaseModel } from "../src/base-model.ts";
import type { ModelConfig } from "../src/model/index.ts";
import { createLoraPolicy } from "../src/policy/lora-policy.ts";
import { Rng } from "../src/rng.ts";
import { Sampler } from "../src/sampler/sampler.ts";
import { snapshotFiles } from "../src/snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../src/snapshots/registry.ts";
import {
  parameterCount,
  QWEN25_05B_SHAPE,
  randomBaseModel,
  SMALL_10M_SHAPE,
} from "../src/testing/random-model.ts";
import { interleaved, median, pairedRatio, progress, round } from "./timing.ts";

export const DECODE = 32;
/** Rounds of every measurement, interleaved; ratios pair the samples of each round. */
const ROUNDS = 3;

export async function adapters(
  base: BaseModel,
  count: number,
  store: LocalStore,
  registry: InMemorySnapshotRegistry,
) {
  const handles: string[] = [];
  for (let i = 0; i < count; i++) {
    const policy = createLoraPolicy(base, {
      rank: 16,
      alpha: 32,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: false,
      seed: i,
    });
    const rng = new Rng(i + 1);
    for (const t of policy.tensors) {
      if (!t.name.includes("lora_B")) continue;
      policy.params.backend.write(
        t.value,
        Float32Array.from({ length: t.value.length }, () => rng.uniform(0.01)),
      );
    }
    const stored = await store.put(`bench/a${i}/1`, snapshotFiles(policy));
    handles.push((await registry.publish("bench", `a${i}`, stored, 0)).handle);
  }
  return handles;
}

export function prompt(vocab: number, length: number, seed: number): number[] {
  const rng = new Rng(seed);
  return Array.from({ length }, () => Math.floor(rng.next() * vocab));
}

export async function timed(run: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await run();
  return (performance.now() - t0) / 1000;
}

/** Decode tokens/s of `policies` running together: time(1 + DECODE tokens) − time(1 token), so prefill cancels out. */
export async function decodeRate(sampler: Sampler, policies: string[], vocab: number): Promise<number> {
  const run = (maxTokens: number) =>
    Promise.all(
      policies.map((p, i) =>
        sampler.sample(p, prompt(vocab, 16, i), 1, { maxTokens, seed: i, temperature: 1 }),
      ),
    );
  await run(2); // warm up (loads adapters)
  const one = await timed(() => run(1));
  const many = await timed(() => run(1 + DECODE));
  return (policies.length * DECODE) / Math.max(1e-9, many - one);
}

async function benchModel(name: string, config: ModelConfig) {
  progress(`sampling: building ${name} (${(parameterCount(config) / 1e6).toFixed(1)}M parameters)`);
  const base = randomBaseModel(config, 3);
  const dir = await mkdtemp(path.join(tmpdir(), "ot-bench-"));
  try {
    const store = new LocalStore(dir);
    const registry = new InMemorySnapshotRegistry();
    const handles = await adapters(base, 16, store, registry);
    const sampler = (batchInvariant = true) =>
      new Sampler({
        base,
        store,
        registry,
        kvCacheBytes: 2 ** 30,
        policyBytes: 2 * 2 ** 30,
        maxTokensPerStep: 512,
        batchInvariant,
      });
    const V = config.vocabSize;
    const prefill = async (batchInvariant: boolean, options: PromptLogprobsOptions = {}) => {
      const s = sampler(batchInvariant);
      await s.sample(handles[0] as string, prompt(V, 64, 1), 1, { maxTokens: 1 });
      return timed(() => s.sample(handles[0] as string, prompt(V, 512, 2), 1, { maxTokens: 1 }, options));
    };
    // What the other design of prompt logprobs would add to a sampling call: the training forward's pass.
    const trainingForward = async () => {
      const s = sampler();
      await s.computeLogprobs(handles[0] as string, prompt(V, 64, 1));
      return timed(() => s.computeLogprobs(handles[0] as string, prompt(V, 512, 2)));
    };
    const group = prompt(V, 256, 3);
    progress(`sampling: ${name}, every side in each of ${ROUNDS} rounds`);
    const t = await interleaved(ROUNDS, {
      batch1: () => decodeRate(sampler(), [handles[0] as string], V),
      adapters16: () => decodeRate(sampler(), handles, V),
      base16: () =>
        decodeRate(
          sampler(),
          handles.map(() => "base"),
          V,
        ),
      prefill: () => prefill(true),
      // The same with OpenBLAS matmuls (batchInvariant: false): what batch invariance costs.
      prefillAuto: () => prefill(false),
      // Prompt logprobs (and the top 20 per position) from the same prefill.
      prefillScored: () => prefill(true, { promptLogprobs: true }),
      prefillTop20: () => prefill(true, { promptLogprobs: true, topkPromptLogprobs: 20 }),
      computeLogprobs: trainingForward,
      shared: () => timed(() => sampler().sample(handles[0] as string, group, 8, { maxTokens: 8, seed: 1 })),
      // The same work without a common prefix: prompts that differ in their first token.
      unshared: () =>
        timed(() =>
          Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              sampler().sample(handles[0] as string, [i, ...group.slice(1)], 1, {
                maxTokens: 8,
                seed: 1 + i,
              }),
            ),
          ),
        ),
    });
    const m = (side: keyof typeof t) => median(t[side]);
    return {
      model: name,
      rounds: ROUNDS,
      decode: {
        batch1_tokens_per_s: round(m("batch1"), 1),
        adapters16_tokens_per_s: round(m("adapters16"), 1),
        base16_tokens_per_s: round(m("base16"), 1),
        adapters16_over_batch1: round(pairedRatio(t.adapters16, t.batch1), 2),
        adapters16_over_base16: round(pairedRatio(t.adapters16, t.base16), 2),
      },
      prefill: {
        prompt_tokens: 512,
        tokens_per_s: round(512 / m("prefill"), 1),
        tokens_per_s_not_batch_invariant: round(512 / m("prefillAuto"), 1),
        not_batch_invariant_speedup: round(pairedRatio(t.prefill, t.prefillAuto), 2),
        grpo_group8_shared_s: round(m("shared"), 3),
        grpo_group8_unshared_s: round(m("unshared"), 3),
        prefix_sharing_speedup: round(pairedRatio(t.unshared, t.shared), 2),
      },
      prompt_logprobs: {
        prompt_tokens: 512,
        prefill_s: round(m("prefill"), 3),
        with_prompt_logprobs_s: round(m("prefillScored"), 3),
        with_top20_s: round(m("prefillTop20"), 3),
        compute_logprobs_s: round(m("computeLogprobs"), 3),
        with_prompt_logprobs_over_prefill: round(pairedRatio(t.prefillScored, t.prefill), 2),
        with_top20_over_prefill: round(pairedRatio(t.prefillTop20, t.prefill), 2),
        // The second-pass design: the prefill plus computeLogprobs, over this one.
        second_pass_over_from_prefill: round(
          pairedRatio(
            t.prefill.map((p, r) => p + (t.computeLogprobs[r] as number)),
            t.prefillScored,
          ),
          2,
        ),
      },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchSampling(only?: string) {
  const out = [];
  if (!only || only === "small") out.push(await benchModel("10M", SMALL_10M_SHAPE));
  if (!only || only === "qwen") out.push(await benchModel("Qwen2.5-0.5B-shaped", QWEN25_05B_SHAPE));
  return out;
}
