// Sampler throughput: decode at batch 1 and 16 (over 16 adapters, and with no
// adapter), prefill of a 512-token prompt, and prefix sharing for a GRPO group.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BaseModel } from "../src/base-model.ts";
import type { ModelConfig } from "../src/model/index.ts";
import { createLoraPolicy } from "../src/policy/lora-policy.ts";
import { Rng } from "../src/rng.ts";
import { Sampler } from "../src/sampler/sampler.ts";
import { snapshotFiles } from "../src/snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../src/snapshots/registry.ts";
import { LocalSnapshotStore } from "../src/snapshots/store.ts";
import {
  parameterCount,
  QWEN25_05B_SHAPE,
  randomBaseModel,
  SMALL_10M_SHAPE,
} from "../src/testing/random-model.ts";
import { progress, round } from "./timing.ts";

export const DECODE = 32;

async function adapters(
  base: BaseModel,
  count: number,
  store: LocalSnapshotStore,
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
    for (const t of policy.tensors)
      if (t.name.includes("lora_B")) for (let j = 0; j < t.value.length; j++) t.value[j] = rng.uniform(0.01);
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
    const store = new LocalSnapshotStore(dir);
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
    progress(`sampling: ${name} decode`);
    const batch1 = await decodeRate(sampler(), [handles[0] as string], V);
    const adapters16 = await decodeRate(sampler(), handles, V);
    const base16 = await decodeRate(
      sampler(),
      handles.map(() => "base"),
      V,
    );
    progress(`sampling: ${name} prefill`);
    const s = sampler();
    await s.sample(handles[0] as string, prompt(V, 64, 1), 1, { maxTokens: 1 });
    const prefill512 = await timed(() =>
      s.sample(handles[0] as string, prompt(V, 512, 2), 1, { maxTokens: 1 }),
    );
    // The same with OpenBLAS matmuls (batchInvariant: false): what batch invariance costs.
    const fast = sampler(false);
    await fast.sample(handles[0] as string, prompt(V, 64, 1), 1, { maxTokens: 1 });
    const prefill512Auto = await timed(() =>
      fast.sample(handles[0] as string, prompt(V, 512, 2), 1, { maxTokens: 1 }),
    );
    progress(`sampling: ${name} prefix sharing`);
    const group = prompt(V, 256, 3);
    const shared = await timed(() =>
      sampler().sample(handles[0] as string, group, 8, { maxTokens: 8, seed: 1 }),
    );
    // The same work without a common prefix: prompts that differ in their first token.
    const unshared = await timed(() =>
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          sampler().sample(handles[0] as string, [i, ...group.slice(1)], 1, { maxTokens: 8, seed: 1 + i }),
        ),
      ),
    );
    return {
      model: name,
      decode: {
        batch1_tokens_per_s: round(batch1, 1),
        adapters16_tokens_per_s: round(adapters16, 1),
        base16_tokens_per_s: round(base16, 1),
        adapters16_over_batch1: round(adapters16 / batch1, 2),
        adapters16_over_base16: round(adapters16 / base16, 2),
      },
      prefill: {
        prompt_tokens: 512,
        tokens_per_s: round(512 / prefill512, 1),
        tokens_per_s_not_batch_invariant: round(512 / prefill512Auto, 1),
        grpo_group8_shared_s: round(shared, 3),
        grpo_group8_unshared_s: round(unshared, 3),
        prefix_sharing_speedup: round(unshared / shared, 2),
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
