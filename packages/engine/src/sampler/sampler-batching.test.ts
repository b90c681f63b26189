import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { WEIGHT_DTYPES, type WeightDtype } from "@opentinker/kernels";
import type { SampledSequence } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { Rng } from "../rng.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { setValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Sampler } from "./sampler.ts";

let dir: string;
let base: BaseModel;
/** The same checkpoint with f32 and with bf16 base weights; `base` is the f32 one outside the dtype loop. */
const bases = new Map<WeightDtype, BaseModel>();
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();
const PROMPT = [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 32, 65, 66];

/** A LoRA adapter with random (non-zero) B, published as the next version of `name`. */
async function publish(
  name: string,
  rank: number,
  seed: number,
): Promise<{ handle: string; policy: Policy }> {
  const policy = createLoraPolicy(base, {
    rank,
    alpha: rank * 2,
    trainAttn: true,
    trainMlp: true,
    trainUnembed: rank % 2 === 0,
    seed,
  });
  const rng = new Rng(seed);
  for (const t of policy.tensors)
    if (t.name.includes("lora_B")) setValues(policy, t.value, () => rng.uniform(0.4));
  const latest = await registry.latest("demo", name);
  const stored = await store.put(`demo/${name}/${(latest?.version ?? 0) + 1}`, snapshotFiles(policy));
  return { handle: (await registry.publish("demo", name, stored, 0)).handle, policy };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-sampler-batch-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 8,
    scale: 0.3,
    maxPositionEmbeddings: 40,
  });
  for (const weightDtype of WEIGHT_DTYPES) {
    bases.set(weightDtype, await loadBaseModel(path.join(dir, "model"), "tiny", { weightDtype }));
  }
  base = bases.get("f32") as BaseModel;
  store = new LocalStore(path.join(dir, "snapshots"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const newSampler = () => new Sampler({ base, store, registry, kvCacheBytes: 4 << 20, blockSize: 4 });

describe.each(WEIGHT_DTYPES)("batching does not change results (%s base weights)", (weightDtype) => {
  beforeAll(() => {
    base = bases.get(weightDtype) as BaseModel;
  });
  afterAll(() => {
    base = bases.get("f32") as BaseModel;
  });

  it("batch-invariant: a request's tokens and logprobs are bit-identical alone or in a crowd of its own and another adapter", async () => {
    const a = (await publish("crowd-a", 8, 301)).handle;
    const b = (await publish("crowd-b", 4, 302)).handle;
    const params = { maxTokens: 8, seed: 5, temperature: 1 };
    const alone = (await newSampler().sample(a, PROMPT, 1, params)).sequences[0];
    const crowded = newSampler();
    // 60 more requests: large groups per adapter (the GEMM paths) and m far past the dot-tile threshold.
    const crowd = Array.from({ length: 60 }, (_, i) =>
      crowded.sample(i % 2 ? a : b, [...PROMPT.slice(0, 8 + (i % 8)), 40 + i], 2, {
        ...params,
        seed: 100 + i,
      }),
    );
    const [mine] = await Promise.all([crowded.sample(a, PROMPT, 1, params), ...crowd]);
    expect(mine.sequences[0]?.tokens).toEqual(alone?.tokens);
    expect(mine.sequences[0]?.logprobs).toEqual(alone?.logprobs);
  });

  it("a step after a larger one (its buffers reused) gives what a fresh sampler gives", async () => {
    const a = (await publish("reuse-a", 8, 303)).handle;
    const params = { maxTokens: 6, seed: 9, temperature: 1 };
    const fresh = (await newSampler().sample(a, PROMPT.slice(0, 5), 1, params)).sequences[0];
    const used = newSampler();
    // 24 prompts prefilled at once leave larger step buffers, full of their activations.
    await Promise.all(
      Array.from({ length: 24 }, (_, i) => used.sample(a, [...PROMPT, 50 + i], 1, { ...params, seed: i })),
    );
    const after = (await used.sample(a, PROMPT.slice(0, 5), 1, params)).sequences[0];
    expect(after?.tokens).toEqual(fresh?.tokens);
    expect(after?.logprobs).toEqual(fresh?.logprobs);
  });

  it("a batch of 8 adapters of different ranks and the base equals each request alone", async () => {
    const handles = ["base"];
    for (let i = 0; i < 8; i++) handles.push((await publish(`rank${i + 1}`, i + 1, 100 + i)).handle);
    const params = { maxTokens: 6, seed: 9 };
    const alone: (SampledSequence | undefined)[] = [];
    for (const h of handles) alone.push((await newSampler().sample(h, PROMPT, 1, params)).sequences[0]);
    const mixed = newSampler();
    const together = await Promise.all(handles.map((h) => mixed.sample(h, PROMPT, 1, params)));
    together.forEach((r, i) => {
      const seq = r.sequences[0];
      expect(seq?.tokens).toEqual(alone[i]?.tokens);
      seq?.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - (alone[i]?.logprobs[t] as number))).toBeLessThan(1e-5);
      });
    });
    // The adapters really differ from one another.
    expect(new Set(together.map((r) => r.sequences[0]?.tokens.join(","))).size).toBeGreaterThan(3);
  });

  it("numSamples = 8 prefills the prompt once and equals 8 requests seeded s … s+7", async () => {
    const { handle } = await publish("grpo", 4, 7);
    const group = newSampler();
    const out = await group.sample(handle, PROMPT, 8, { maxTokens: 5, seed: 20 });
    expect(group.stats().prefillTokens).toBe(PROMPT.length);
    const separate = newSampler();
    for (let i = 0; i < 8; i++) {
      const one = await separate.sample(handle, PROMPT, 1, { maxTokens: 5, seed: 20 + i });
      expect(one.sequences[0]?.tokens).toEqual(out.sequences[i]?.tokens);
    }
  });

  it("a handle pins its version: v keeps its outputs after v+1 is published, v+1 has its own", async () => {
    const v1 = (await publish("evolving", 4, 1)).handle;
    const s = newSampler();
    const params = { maxTokens: 6, temperature: 0 };
    const before = (await s.sample(v1, PROMPT, 1, params)).sequences[0]?.tokens;
    const v2 = (await publish("evolving", 4, 2)).handle;
    expect(v2).not.toBe(v1);
    expect((await s.sample(v1, PROMPT, 1, params)).sequences[0]?.tokens).toEqual(before);
    const fresh = newSampler();
    expect((await s.sample(v2, PROMPT, 1, params)).sequences[0]?.tokens).toEqual(
      (await fresh.sample(v2, PROMPT, 1, params)).sequences[0]?.tokens,
    );
  });
});

describe("filtered sampling", () => {
  it("top-k, top-p and min-p requests sampled in one step with others get the tokens they get alone", async () => {
    const { handle } = await publish("filters", 4, 11);
    const kinds = [
      {},
      { topK: 5 },
      { topP: 0.7, temperature: 0.8 },
      { minP: 0.1 },
      { topK: 8, topP: 0.9, minP: 0.05 },
    ];
    const calls = kinds.flatMap((k, i) => [
      { policy: "base", params: { maxTokens: 6, seed: 30 + i, ...k } },
      { policy: handle, params: { maxTokens: 6, seed: 60 + i, ...k } },
    ]);
    const alone: SampledSequence[][] = [];
    for (const c of calls) alone.push((await newSampler().sample(c.policy, PROMPT, 2, c.params)).sequences);
    const together = newSampler();
    const batched = await Promise.all(calls.map((c) => together.sample(c.policy, PROMPT, 2, c.params)));
    batched.forEach((r, i) => {
      expect(r.sequences).toEqual(alone[i]);
    });
  });

  it("min-p 1 keeps only the most likely token: the greedy tokens at any temperature", async () => {
    const s = newSampler();
    const greedy = (await s.sample("base", PROMPT, 1, { maxTokens: 8, temperature: 0 })).sequences[0];
    const minP = (await s.sample("base", PROMPT, 3, { maxTokens: 8, temperature: 1.5, minP: 1, seed: 4 }))
      .sequences;
    for (const seq of minP) {
      expect(seq.tokens).toEqual(greedy?.tokens);
      expect(seq.logprobs).toEqual(greedy?.logprobs);
    }
  });
});

describe("tenants share the sampler", () => {
  it("a second tenant's small request is admitted and served while the first has 120 queued", async () => {
    // A small cache and step budget, so the crowd must queue.
    const s = new Sampler({
      base,
      store,
      registry,
      kvCacheBytes: 1 << 18,
      blockSize: 4,
      maxTokensPerStep: 16,
    });
    const order: string[] = [];
    const crowd = Array.from({ length: 120 }, (_, i) =>
      s
        .sample("base", PROMPT, 1, { maxTokens: 16, seed: i }, { tenant: "big" })
        .then(() => order.push(`big-${i}`)),
    );
    const small = s
      .sample("base", PROMPT.slice(0, 4), 1, { maxTokens: 2, seed: 1 }, { tenant: "small" })
      .then(() => order.push("small"));
    await Promise.all([...crowd, small]);
    // Admitted FIFO, the small request would finish after (nearly) the whole crowd.
    expect(order.indexOf("small")).toBeLessThan(5);
  });

  it("one tenant's results do not depend on another tenant's traffic", async () => {
    const params = { maxTokens: 8, seed: 11 };
    const alone = (await newSampler().sample("base", PROMPT, 1, params, { tenant: "a" })).sequences[0];
    const shared = newSampler();
    const others = Array.from({ length: 30 }, (_, i) =>
      shared.sample("base", [...PROMPT.slice(0, 6), 30 + i], 2, { maxTokens: 6, seed: i }, { tenant: "b" }),
    );
    const [mine] = await Promise.all([shared.sample("base", PROMPT, 1, params, { tenant: "a" }), ...others]);
    expect(mine.sequences[0]).toEqual(alone);
  });
});

describe("stopping", () => {
  it("a stop string that spans a token boundary stops the sequence, which keeps it", async () => {
    const s = newSampler();
    const tokenizer = base.tokenizer;
    if (!tokenizer) throw new Error("the tiny model has a tokenizer");
    const free =
      (await s.sample("base", PROMPT, 1, { maxTokens: 12, temperature: 0 })).sequences[0]?.tokens ?? [];
    // The last character of token 3 and the first of token 4.
    const left = tokenizer.decode(free.slice(0, 4));
    const boundary = tokenizer.decode(free.slice(0, 3)).length;
    const stop = left.slice(boundary - 1, boundary + 1);
    expect(stop).toHaveLength(2);
    const stopped = (await s.sample("base", PROMPT, 1, { maxTokens: 12, temperature: 0, stop: [stop] }))
      .sequences[0];
    expect(stopped?.stopReason).toBe("stop");
    expect(tokenizer.decode(stopped?.tokens ?? [])).toContain(stop);
    expect(stopped?.tokens.length).toBeLessThanOrEqual(4);
  });

  it("maxTokens and the end of the context both end a sequence with length", async () => {
    const s = newSampler();
    const short = (await s.sample("base", PROMPT, 1, { maxTokens: 3, seed: 1 })).sequences[0];
    expect(short).toMatchObject({ stopReason: "length" });
    expect(short?.tokens).toHaveLength(3);
    // The model's context is 40 positions: a 16-token prompt leaves room for 24.
    const long = (await s.sample("base", PROMPT, 1, { maxTokens: 100, seed: 1 })).sequences[0];
    expect(long?.stopReason).toBe("length");
    expect(long?.tokens.length).toBeLessThanOrEqual(24);
  });
});

describe("bad sampling parameters", () => {
  it("are refused by name while the other sequences in the batch finish unaffected", async () => {
    const s = newSampler();
    const running = s.sample("base", PROMPT, 2, { maxTokens: 8, seed: 3 });
    await expect(s.sample("base", PROMPT, 1, { maxTokens: 0 })).rejects.toThrow(/params.maxTokens/);
    await expect(s.sample("base", PROMPT, 1, { maxTokens: 2, temperature: -1 })).rejects.toThrow(
      /params.temperature/,
    );
    await expect(s.sample("base", PROMPT, 1, { maxTokens: 2, topP: 0 })).rejects.toThrow(/params.topP/);
    await expect(s.sample("base", PROMPT, 1, { maxTokens: 2, topP: 1.5 })).rejects.toThrow(/params.topP/);
    await expect(s.sample("base", PROMPT, 1, { maxTokens: 2, minP: 1.5 })).rejects.toThrow(/params.minP/);
    await expect(s.sample("base", [1, 2, 100000], 1, { maxTokens: 2 })).rejects.toThrow(
      /prompt\[2\] is 100000/,
    );
    const done = await running;
    expect(done.sequences.map((q) => q.tokens.length)).toEqual([8, 8]);
  });
});
