// Prompt logprobs and top-k prompt logprobs from the sampler's own prefill: they
// agree with computeLogprobs (the training forward) for every kind of policy and
// weight dtype, the top k follow a float64 forward over the whole vocabulary, and
// the prefix cache, chunked prefill, n > 1, preemption and images leave them right.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  buildSftDatum,
  type Datum,
  type ImageChunk,
  type ModelInput,
  type PromptLogprobsOptions,
  type SampleResponse,
} from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { randomImageChunk } from "../testing/images.ts";
import { referenceLogSoftmax } from "../testing/reference-forward.ts";
import { type TinyModelOptions, writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { Sampler } from "./sampler.ts";

const SHAPE = { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 48, scale: 0.3 };
const LORA = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: true, seed: 1 };
/** 37 positions: over 9 blocks of 4, and over several steps of 8 rows. */
const PROMPT = Array.from({ length: 37 }, (_, i) => (i * 37 + 11) % 250);
const SCORED: PromptLogprobsOptions = { promptLogprobs: true, topkPromptLogprobs: 5 };

let dir: string;
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();

interface Served {
  base: BaseModel;
  /** "base", a LoRA adapter's handle, a full-parameter policy's handle. */
  policies: string[];
}
const served = new Map<"f32" | "bf16" | "vl", Served>();
const get = (name: "f32" | "bf16" | "vl") => served.get(name) as Served;

async function publish(policy: Policy, name: string, datum: Datum): Promise<string> {
  const trainer = new Trainer(policy);
  for (let s = 0; s < 8; s++) {
    trainer.forwardBackward([datum], "cross_entropy");
    trainer.optimStep({ learningRate: 2e-2 });
  }
  const stored = await store.put(`demo/${name}/1`, snapshotFiles(policy));
  return (await registry.publish("demo", name, stored, policy.step)).handle;
}

const IMAGE: ImageChunk = randomImageChunk(16, 1, 16);
/** text · image (16 placeholders at positions 4–19) · text: 23 positions. */
const VL_PROMPT: ModelInput = {
  chunks: [
    { type: "encoded_text", tokens: [10, 20, 30, 40] },
    IMAGE,
    { type: "encoded_text", tokens: [50, 60, 70] },
  ],
};
/** The token ids of a model input, images as their placeholders. */
function tokensOf(base: BaseModel, input: ModelInput): number[] {
  const image = base.config.vision?.imageTokenId ?? 0;
  return input.chunks.flatMap((c) =>
    c.type === "encoded_text" ? c.tokens : new Array<number>(16).fill(image),
  );
}

async function serve(name: string, options: TinyModelOptions, weightDtype?: "bf16"): Promise<Served> {
  await writeTinyModel(path.join(dir, name), options);
  const base = await loadBaseModel(path.join(dir, name), name, weightDtype ? { weightDtype } : {});
  // Adapters trained a little, so that they differ from the base.
  const datum = options.vision
    ? buildSftDatum({
        sequence: { input: VL_PROMPT, tokens: tokensOf(base, VL_PROMPT) },
        weights: tokensOf(base, VL_PROMPT).map((_, i) => (i > 20 ? 1 : 0)),
      })
    : buildSftDatum({ sequence: PROMPT, weights: PROMPT.map((_, i) => (i % 3 === 0 ? 1 : 0)) });
  return {
    base,
    policies: [
      "base",
      await publish(createLoraPolicy(base, LORA), `${name}-lora`, datum),
      await publish(createFullPolicy(base), `${name}-full`, datum),
    ],
  };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-prompt-logprobs-"));
  store = new LocalStore(path.join(dir, "snapshots"));
  served.set("f32", await serve("f32", { ...SHAPE, seed: 4 }));
  served.set(
    "bf16",
    await serve("bf16", { ...SHAPE, seed: 5, dtype: "BF16", tieWordEmbeddings: false }, "bf16"),
  );
  served.set("vl", await serve("vl", { ...SHAPE, seed: 6, vision: { imageSize: 16, patchSize: 4 } }));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const sampler = (base: BaseModel, options: { kvCacheBytes?: number } = {}) =>
  new Sampler({
    base,
    store,
    registry,
    kvCacheBytes: options.kvCacheBytes ?? 8 << 20,
    blockSize: 4,
    maxTokensPerStep: 8,
  });

/** Prompt logprobs equal `expected` within 1e-4, with null exactly where it has null. */
function expectAgree(got: SampleResponse["promptLogprobs"], expected: (number | null)[], label: string) {
  expect(got, label).toHaveLength(expected.length);
  expected.forEach((e, i) => {
    const g = got?.[i];
    if (e === null) expect(g, `${label} position ${i}`).toBeNull();
    else expect(Math.abs((g as number) - e), `${label} position ${i}`).toBeLessThan(1e-4);
  });
}

/** Top-k lists: null where the prompt logprobs are; k most likely first; the prompt token's own entry equals its logprob. */
function expectConsistentTopK(out: SampleResponse, tokens: number[], k: number, label: string) {
  const logprobs = out.promptLogprobs ?? [];
  const top = out.topkPromptLogprobs ?? [];
  expect(top, label).toHaveLength(logprobs.length);
  top.forEach((entries, i) => {
    if (logprobs[i] === null) {
      expect(entries, `${label} position ${i}`).toBeNull();
      return;
    }
    expect(entries, `${label} position ${i}`).toHaveLength(k);
    const values = (entries ?? []).map(([, lp]) => lp);
    for (let j = 1; j < values.length; j++) expect(values[j]).toBeLessThanOrEqual(values[j - 1] as number);
    expect(values[0]).toBeGreaterThanOrEqual(logprobs[i] as number);
    const own = entries?.find(([id]) => id === tokens[i]);
    if (own) expect(own[1]).toBe(logprobs[i]);
  });
}

describe("prompt logprobs", () => {
  for (const dtype of ["f32", "bf16"] as const) {
    it(`agree with computeLogprobs within 1e-4: base, LoRA and full-parameter, ${dtype} weights`, async () => {
      const { base, policies } = get(dtype);
      const s = sampler(base);
      for (const policy of policies) {
        const out = await s.sample(policy, PROMPT, 1, { maxTokens: 3, seed: 1 }, SCORED);
        expectAgree(out.promptLogprobs, await s.computeLogprobs(policy, PROMPT), `${dtype} ${policy}`);
        expectConsistentTopK(out, PROMPT, 5, `${dtype} ${policy}`);
      }
    });
  }

  it("the top k of each position are a float64 forward's over the whole vocabulary, most likely first", async () => {
    const { base } = get("f32");
    const k = 20;
    const out = await sampler(base).sample("base", PROMPT, 1, { maxTokens: 1 }, { topkPromptLogprobs: k });
    expect(out.promptLogprobs).toBeUndefined();
    const reference = referenceLogSoftmax(base.config, base.weights, base.rope, PROMPT);
    const top = out.topkPromptLogprobs ?? [];
    expect(top).toHaveLength(PROMPT.length);
    expect(top[0]).toBeNull();
    for (let p = 1; p < PROMPT.length; p++) {
      const dist = reference[p - 1] as number[];
      const sorted = dist.map((lp, id) => [id, lp] as const).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
      const entries = top[p] ?? [];
      expect(entries).toHaveLength(k);
      expect(new Set(entries.map(([id]) => id)).size).toBe(k);
      entries.forEach(([id, lp], j) => {
        // The j-th value is the reference's j-th, and the token named is one with that value.
        expect(Math.abs(lp - (sorted[j]?.[1] as number)), `position ${p} rank ${j}`).toBeLessThan(1e-4);
        expect(Math.abs(lp - (dist[id] as number)), `position ${p} token ${id}`).toBeLessThan(1e-4);
      });
      // Where the reference's ranks are well apart, the very same tokens in the same order.
      entries.forEach(([id], j) => {
        const gap = Math.min(
          Math.abs((sorted[j]?.[1] as number) - (sorted[j + 1]?.[1] ?? Number.NEGATIVE_INFINITY)),
          j > 0
            ? Math.abs((sorted[j]?.[1] as number) - (sorted[j - 1]?.[1] as number))
            : Number.POSITIVE_INFINITY,
        );
        if (gap > 1e-3) expect(id, `position ${p} rank ${j}`).toBe(sorted[j]?.[0]);
      });
    }
  });

  it("a prompt already in the prefix cache is still scored whole, and its blocks still serve later calls", async () => {
    const { base, policies } = get("f32");
    const lora = policies[1] as string;
    const fresh = await sampler(base).sample(lora, PROMPT, 1, { maxTokens: 2, seed: 1 }, SCORED);
    const s = sampler(base);
    await s.sample(lora, PROMPT, 1, { maxTokens: 2 });
    const hits = s.kv.stats().promptCacheHitTokens;
    const prefilled = s.stats().prefillTokens;
    const scored = await s.sample(lora, PROMPT, 1, { maxTokens: 2, seed: 1 }, SCORED);
    expect(s.kv.stats().promptCacheHitTokens).toBe(hits);
    expect(s.stats().prefillTokens - prefilled).toBe(PROMPT.length);
    expect(scored).toEqual(fresh);
    await s.sample(lora, PROMPT, 1, { maxTokens: 2 });
    expect(s.kv.stats().promptCacheHitTokens).toBeGreaterThan(hits);
  });

  it("with several samples the prompt is scored once, and the samples are those of an unscored call", async () => {
    const { base, policies } = get("f32");
    const lora = policies[1] as string;
    const params = { maxTokens: 5, seed: 7 };
    const one = await sampler(base).sample(lora, PROMPT, 1, params, SCORED);
    const s = sampler(base);
    const many = await s.sample(lora, PROMPT, 4, params, SCORED);
    expect(s.stats().prefillTokens).toBe(PROMPT.length);
    expect(many.promptLogprobs).toEqual(one.promptLogprobs);
    expect(many.topkPromptLogprobs).toEqual(one.topkPromptLogprobs);
    const plain = await sampler(base).sample(lora, PROMPT, 4, params);
    expect(many.sequences).toEqual(plain.sequences);
  });

  it("calls that do not ask get no prompt fields, and are unchanged by a scored call in their steps", async () => {
    const { base, policies } = get("f32");
    const [, lora, full] = policies as [string, string, string];
    const params = { maxTokens: 4, seed: 3 };
    const alone = [
      await sampler(base).sample(lora, PROMPT.slice(3), 2, params),
      await sampler(base).sample(full, PROMPT.slice(5), 1, params),
    ];
    const s = sampler(base);
    const [scored, ...plain] = await Promise.all([
      s.sample(lora, PROMPT, 1, params, SCORED),
      s.sample(lora, PROMPT.slice(3), 2, params),
      s.sample(full, PROMPT.slice(5), 1, params),
    ]);
    expect(plain).toEqual(alone);
    for (const out of plain) {
      expect(out).not.toHaveProperty("promptLogprobs");
      expect(out).not.toHaveProperty("topkPromptLogprobs");
    }
    expect(scored).toEqual(await sampler(base).sample(lora, PROMPT, 1, params, SCORED));
  });

  it("requests preempted mid-prompt are scored again from the start", async () => {
    const { base, policies } = get("f32");
    const lora = policies[1] as string;
    const params = { maxTokens: 12, seed: 5 };
    const prompts = [0, 1, 2, 3, 4, 5].map((i) => PROMPT.slice(i, 30 + i));
    const alone = [];
    for (const p of prompts) alone.push(await sampler(base).sample(lora, p, 2, params, SCORED));
    // Room for two of them at a time: the rest wait, and decoding ones run out of blocks.
    const s = sampler(base, { kvCacheBytes: 2 * 2 * 4 * 2 * 8 * 4 * 22 });
    const together = await Promise.all(prompts.map((p) => s.sample(lora, p, 2, params, SCORED)));
    expect(s.stats().prefillTokens).toBeGreaterThan(prompts.reduce((n, p) => n + p.length, 0));
    expect(together).toEqual(alone);
    expect(s.kv.stats().usedBlocks).toBe(0);
  });

  it("a vision-language prompt: null at the image's placeholders, the rest as computeLogprobs", async () => {
    const { base, policies } = get("vl");
    const s = sampler(base);
    for (const policy of policies) {
      const out = await s.sample(policy, VL_PROMPT, 2, { maxTokens: 3, seed: 2 }, SCORED);
      const computed = await s.computeLogprobs(policy, VL_PROMPT);
      expect(computed.slice(4, 20)).toEqual(new Array(16).fill(null));
      expectAgree(out.promptLogprobs, computed, `vl ${policy}`);
      expect(out.topkPromptLogprobs?.slice(4, 20)).toEqual(new Array(16).fill(null));
      expectConsistentTopK(out, tokensOf(base, VL_PROMPT), 5, `vl ${policy}`);
    }
  });

  it("a one-token prompt has nothing to score", async () => {
    const out = await sampler(get("f32").base).sample("base", [42], 1, { maxTokens: 1 }, SCORED);
    expect(out.promptLogprobs).toEqual([null]);
    expect(out.topkPromptLogprobs).toEqual([null]);
  });

  it("bad options are refused by name before anything is queued", async () => {
    const s = sampler(get("f32").base);
    const call = (options: PromptLogprobsOptions) => s.sample("base", PROMPT, 1, { maxTokens: 1 }, options);
    await expect(call({ topkPromptLogprobs: 21 })).rejects.toThrow(/sample: topkPromptLogprobs: .*20/);
    await expect(call({ topkPromptLogprobs: -1 })).rejects.toThrow(/sample: topkPromptLogprobs: .*0/);
    await expect(call({ topkPromptLogprobs: 2.5 })).rejects.toThrow(
      /sample: topkPromptLogprobs: .*expected int/,
    );
    await expect(call({ promptLogprobs: JSON.parse('"yes"') })).rejects.toThrow(/sample: promptLogprobs: /);
    expect(s.stats().waiting).toBe(0);
  });
});
