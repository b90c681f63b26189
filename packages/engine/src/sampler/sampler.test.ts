import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { LoraSpec } from "../policy/policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { AbortError, Sampler } from "./sampler.ts";

let dir: string;
let base: BaseModel;
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();
const handles: string[] = [];
const trainers: Trainer[] = [];

const SPEC: LoraSpec = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: true, seed: 1 };
const PROMPT = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-sampler-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 4,
    scale: 0.3,
  });
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
  store = new LocalStore(path.join(dir, "snapshots"));
  // Two adapters trained towards different continuations, so their outputs differ.
  for (const [i, target] of [
    [0, [7, 8, 9]],
    [1, [200, 201, 202]],
  ] as [number, number[]][]) {
    const policy = createLoraPolicy(base, { ...SPEC, seed: 10 + i });
    const trainer = new Trainer(policy);
    const datum = buildSftDatum({
      sequence: [...PROMPT, ...target],
      weights: [...PROMPT.map(() => 0), 1, 1, 1],
    });
    for (let s = 0; s < 20; s++) {
      trainer.forwardBackward([datum], "cross_entropy");
      trainer.optimStep({ learningRate: 2e-2 });
    }
    const stored = await store.put(`demo/a${i}/1`, snapshotFiles(policy));
    handles.push((await registry.publish("demo", `a${i}`, stored, policy.step)).handle);
    trainers.push(trainer);
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const sampler = (options: { kvCacheBytes?: number; blockSize?: number } = {}) =>
  new Sampler({
    base,
    store,
    registry,
    kvCacheBytes: options.kvCacheBytes ?? 8 << 20,
    blockSize: options.blockSize ?? 4,
  });

describe("the sampler", () => {
  it("returns logprobs that agree with the trainer's for the generated tokens", async () => {
    const s = sampler();
    for (const [i, handle] of handles.entries()) {
      const out = await s.sample(handle, PROMPT, 1, { maxTokens: 6, temperature: 1, seed: 3 });
      const seq = out.sequences[0];
      if (!seq) throw new Error("no sequence");
      const datum = buildSftDatum({
        sequence: [...PROMPT, ...seq.tokens],
        weights: [...PROMPT, ...seq.tokens].map(() => 1),
      });
      const trained =
        (trainers[i] as Trainer).forward([datum], "cross_entropy").lossFnOutputs[0]?.logprobs?.data ?? [];
      const own = trained.slice(PROMPT.length - 1);
      seq.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - (own[t] as number))).toBeLessThan(1e-4);
      });
      // computeLogprobs goes through the same path as the trainer.
      const computed = await s.computeLogprobs(handle, [...PROMPT, ...seq.tokens]);
      expect(computed[0]).toBeNull();
      expect(Math.abs((computed[PROMPT.length] as number) - (seq.logprobs[0] as number))).toBeLessThan(1e-4);
    }
  });

  it("the same seed and request give the same tokens; an adapter's snapshot steers its samples", async () => {
    const s = sampler();
    const a = await s.sample(handles[0] as string, PROMPT, 2, { maxTokens: 5, seed: 42 });
    const b = await s.sample(handles[0] as string, PROMPT, 2, { maxTokens: 5, seed: 42 });
    expect(b.sequences.map((q) => q.tokens)).toEqual(a.sequences.map((q) => q.tokens));
    const greedy0 = await s.sample(handles[0] as string, PROMPT, 1, { maxTokens: 3, temperature: 0 });
    const greedy1 = await s.sample(handles[1] as string, PROMPT, 1, { maxTokens: 3, temperature: 0 });
    expect(greedy0.sequences[0]?.tokens).toEqual([7, 8, 9]);
    expect(greedy1.sequences[0]?.tokens).toEqual([200, 201, 202]);
  });

  it("one batch mixes the base and several adapters, each row with its own adapter", async () => {
    const alone = sampler();
    const policies = ["base", handles[0] as string, handles[1] as string];
    const params = { maxTokens: 4, temperature: 0 };
    const expected = [];
    for (const p of policies) expected.push((await alone.sample(p, PROMPT, 1, params)).sequences[0]?.tokens);
    const mixed = sampler();
    const together = await Promise.all(
      [...policies, ...policies].map((p, i) =>
        mixed.sample(p, i < 3 ? PROMPT : PROMPT.slice(0, 10 + i), 1, params),
      ),
    );
    expect(together.slice(0, 3).map((r) => r.sequences[0]?.tokens)).toEqual(expected);
  });

  it("completions of one prompt and repeated prompts share cached prefix blocks", async () => {
    const s = sampler();
    await s.sample(handles[0] as string, PROMPT, 4, { maxTokens: 3, seed: 1 });
    expect(s.kv.stats().promptCacheHitTokens).toBe(0);
    await s.sample(handles[0] as string, PROMPT, 4, { maxTokens: 3, seed: 2 });
    expect(s.kv.stats().promptCacheHitTokens).toBeGreaterThanOrEqual(16);
    // Another policy version never reuses those blocks.
    const before = s.kv.stats().promptCacheHitTokens;
    await s.sample(handles[1] as string, PROMPT, 1, { maxTokens: 1 });
    expect(s.kv.stats().promptCacheHitTokens).toBe(before);
  });

  it("a full cache queues requests instead of failing them", async () => {
    // Room for about two requests at a time.
    const s = sampler({ kvCacheBytes: 2 * 2 * 4 * 2 * 16 * 4 * 14 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        s.sample(handles[i % 2] as string, PROMPT, 2, { maxTokens: 6, seed: i }),
      ),
    );
    for (const r of results) for (const q of r.sequences) expect(q.tokens).toHaveLength(6);
    expect(s.kv.stats().usedBlocks).toBe(0);
  });

  it("an aborted request is rejected and frees its blocks; the others finish", async () => {
    const s = sampler();
    const controller = new AbortController();
    const doomed = s.sample(
      handles[0] as string,
      PROMPT,
      2,
      { maxTokens: 50, seed: 1 },
      { signal: controller.signal },
    );
    const survivor = s.sample(handles[1] as string, PROMPT, 1, { maxTokens: 10, seed: 1 });
    // Abort once generation is under way (its blocks are in use).
    const abortWhenRunning = () => {
      if (s.stats().active === 2 && s.kv.stats().usedBlocks > 0) controller.abort();
      else setImmediate(abortWhenRunning);
    };
    abortWhenRunning();
    await expect(doomed).rejects.toBeInstanceOf(AbortError);
    expect((await survivor).sequences[0]?.tokens).toHaveLength(10);
    expect(s.kv.stats().usedBlocks).toBe(0);
  });

  it("stops on a stop token id and reports why", async () => {
    const s = sampler();
    const out = await s.sample(handles[0] as string, PROMPT, 1, { maxTokens: 10, temperature: 0, stop: [8] });
    expect(out.sequences[0]).toMatchObject({ tokens: [7, 8], stopReason: "stop" });
  });

  it("bad requests are refused by name before anything is queued", async () => {
    const s = sampler();
    await expect(s.sample("opentinker://demo/nope/sampler/1", PROMPT, 1, { maxTokens: 2 })).rejects.toThrow(
      /unknown policy handle/,
    );
    await expect(s.sample("base", [1, 99999], 1, { maxTokens: 2 })).rejects.toThrow(/prompt\[1\] is 99999/);
    await expect(s.sample("base", PROMPT, 0, { maxTokens: 2 })).rejects.toThrow(/numSamples/);
    await expect(s.sample("base", [], 1, { maxTokens: 2 })).rejects.toThrow(/empty/);
    expect(s.stats().waiting).toBe(0);
  });
});
