// The sampler with image prompts (a vision-language base): prefill feeds soft
// tokens, the prefix cache keys blocks by image content, bad images fail alone.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum, type Datum, type ImageChunk, type ModelInput } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { pngImageChunk, randomImageChunk } from "../testing/images.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { Sampler } from "./sampler.ts";

const SHAPE = { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 48, scale: 0.3 };
// 16×16 images in 4×4 patches: 16 soft tokens each.
const VISION = { imageSize: 16, patchSize: 4 };
const BEFORE = [10, 20, 30, 40];
const AFTER = [50, 60, 70];
const IMAGE_A = randomImageChunk(16, 1, 16);
const IMAGE_B = randomImageChunk(16, 2, 16);

let dir: string;
let base: BaseModel;
let textBase: BaseModel;
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();
/** Policy key ("base" or a handle) → a trainer over the same weights. */
const trainers = new Map<string, Trainer>();

/** text · image · text: one full block of text before the image (block size 4), 23 positions. */
function promptWith(image: ImageChunk): ModelInput {
  return {
    chunks: [{ type: "encoded_text", tokens: BEFORE }, image, { type: "encoded_text", tokens: AFTER }],
  };
}

/** The prompt followed by `completion`, as a datum weighted on the completion only. */
function datumOf(image: ImageChunk, completion: number[]): Datum {
  const prompt = promptWith(image);
  const tokens = [...BEFORE, ...new Array<number>(16).fill(0), ...AFTER, ...completion];
  return buildSftDatum({
    sequence: { input: { chunks: [...prompt.chunks, { type: "encoded_text", tokens: completion }] }, tokens },
    weights: tokens.map((_, i) => (i >= 23 ? 1 : 0)),
  });
}

async function publish(policy: Policy, name: string): Promise<string> {
  const trainer = new Trainer(policy);
  for (let s = 0; s < 10; s++) {
    trainer.forwardBackward(
      [datumOf(IMAGE_A, [7, 8, 9]), datumOf(IMAGE_B, [200, 201, 202])],
      "cross_entropy",
    );
    trainer.optimStep({ learningRate: 2e-2 });
  }
  const stored = await store.put(`demo/${name}/1`, snapshotFiles(policy));
  const { handle } = await registry.publish("demo", name, stored, policy.step);
  trainers.set(handle, trainer);
  return handle;
}

let loraHandle: string;
let fullHandle: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-sampler-vl-"));
  await writeTinyModel(path.join(dir, "vl"), { ...SHAPE, seed: 4, vision: VISION });
  base = await loadBaseModel(path.join(dir, "vl"), "tiny-vl");
  await writeTinyModel(path.join(dir, "text"), { ...SHAPE, seed: 4 });
  textBase = await loadBaseModel(path.join(dir, "text"), "tiny");
  store = new LocalStore(path.join(dir, "snapshots"));
  // A fresh adapter (B = 0) computes exactly the base model.
  trainers.set("base", new Trainer(createLoraPolicy(base, { ...LORA, seed: 9 })));
  loraHandle = await publish(createLoraPolicy(base, LORA), "lora");
  fullHandle = await publish(createFullPolicy(base), "full");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const LORA = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: true, seed: 1 };

const sampler = (over: BaseModel = base) =>
  new Sampler({ base: over, store, registry, kvCacheBytes: 8 << 20, blockSize: 4 });

describe("sampling with images", () => {
  it("sampled and computed logprobs equal the trainer's forward within 1e-4 (base, LoRA, full-parameter)", async () => {
    const s = sampler();
    for (const policy of ["base", loraHandle, fullHandle]) {
      const out = await s.sample(policy, promptWith(IMAGE_A), 1, { maxTokens: 6, temperature: 1, seed: 3 });
      const seq = out.sequences[0];
      if (!seq) throw new Error("no sequence");
      const trainer = trainers.get(policy) as Trainer;
      const trained =
        trainer.forward([datumOf(IMAGE_A, seq.tokens)], "cross_entropy").lossFnOutputs[0]?.logprobs?.data ??
        [];
      const own = trained.slice(22);
      seq.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - (own[t] as number)), `${policy} token ${t}`).toBeLessThan(1e-4);
      });
      const sequence: ModelInput = {
        chunks: [...promptWith(IMAGE_A).chunks, { type: "encoded_text", tokens: seq.tokens }],
      };
      const computed = await s.computeLogprobs(policy, sequence);
      expect(computed).toHaveLength(23 + seq.tokens.length);
      // No logprob for the first position nor for the image's placeholders.
      expect(computed.slice(0, 1)).toEqual([null]);
      expect(computed.slice(4, 20)).toEqual(new Array(16).fill(null));
      computed.slice(20).forEach((lp, i) => {
        expect(Math.abs((lp as number) - (trained[19 + i] as number))).toBeLessThan(1e-4);
      });
    }
  });

  it("a trained policy's answer depends on the picture", async () => {
    const s = sampler();
    for (const policy of [loraHandle, fullHandle]) {
      const a = await s.sample(policy, promptWith(IMAGE_A), 1, { maxTokens: 3, temperature: 0 });
      const b = await s.sample(policy, promptWith(IMAGE_B), 1, { maxTokens: 3, temperature: 0 });
      expect(a.sequences[0]?.tokens, policy).toEqual([7, 8, 9]);
      expect(b.sequences[0]?.tokens, policy).toEqual([200, 201, 202]);
    }
  });

  it("two different images with identical text: different outputs, and only the text before them is shared", async () => {
    const s = sampler();
    const params = { maxTokens: 4, temperature: 1, seed: 5 };
    const a = await s.sample("base", promptWith(IMAGE_A), 1, params);
    expect(s.kv.stats().promptCacheHitTokens).toBe(0);
    const b = await s.sample("base", promptWith(IMAGE_B), 1, params);
    expect(b.sequences[0]?.logprobs).not.toEqual(a.sequences[0]?.logprobs);
    // The block of text before the image is the same; no block holding the image is.
    expect(s.kv.stats().promptCacheHitTokens).toBe(4);
  });

  it("the same image twice shares the cached blocks and gives the same result", async () => {
    const s = sampler();
    const params = { maxTokens: 4, temperature: 1, seed: 5 };
    const first = await s.sample("base", promptWith(IMAGE_A), 1, params);
    // The same pixels sent again (a new chunk object).
    const again = await s.sample("base", promptWith(randomImageChunk(16, 1, 16)), 1, params);
    // Every full block of the 23-position prompt but the one with its last position: 5 blocks of 4.
    expect(s.kv.stats().promptCacheHitTokens).toBe(20);
    expect(again.sequences).toEqual(first.sequences);
  });

  it("the same image one position later is not a cache hit, even where the token ids agree", async () => {
    const s = sampler();
    await s.sample("base", promptWith(IMAGE_A), 1, { maxTokens: 1 });
    // A literal placeholder token before the image: positions 0..19 hold the same ids as before.
    const imageToken = base.config.vision?.imageTokenId as number;
    const shifted: ModelInput = {
      chunks: [
        { type: "encoded_text", tokens: [...BEFORE, imageToken] },
        IMAGE_A,
        { type: "encoded_text", tokens: AFTER },
      ],
    };
    await s.sample("base", shifted, 1, { maxTokens: 1 });
    expect(s.kv.stats().promptCacheHitTokens).toBe(4);
  });

  it("bad images fail alone with clear errors; the other requests of the batch finish as if alone", async () => {
    const params = { maxTokens: 5, temperature: 1, seed: 11 };
    const alone = await sampler().sample(loraHandle, promptWith(IMAGE_B), 2, params);
    const aloneText = await sampler().sample("base", [1, 2, 3], 1, params);
    const s = sampler();
    const gray = () => [128, 128, 128] as const;
    const corrupt: ImageChunk = { ...IMAGE_A, data: Buffer.from("definitely not a png").toString("base64") };
    const requests = [
      s.sample(loraHandle, promptWith(IMAGE_B), 2, params),
      s.sample("base", promptWith(pngImageChunk(12, gray, 16)), 1, params),
      s.sample("base", promptWith({ ...IMAGE_A, expectedTokens: 9 }), 1, params),
      s.sample("base", promptWith(corrupt), 1, params),
      s.sample("base", promptWith({ ...IMAGE_A, format: "jpeg" }), 1, params),
      s.sample("base", [1, 2, 3], 1, params),
    ];
    const results = await Promise.allSettled(requests);
    const reasons = results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"));
    expect(reasons[0]).toBe("ok");
    expect(reasons[1]).toContain(
      "sample: prompt.chunks[1]: the image is 12×12 pixels, this model takes 16×16",
    );
    expect(reasons[2]).toContain(
      "sample: prompt.chunks[1].expectedTokens is 9, but this model gives an image 16 tokens",
    );
    expect(reasons[3]).toContain("sample: prompt.chunks[1]: the image data is not a valid PNG");
    expect(reasons[4]).toContain("jpeg images are not supported yet");
    expect(reasons[5]).toBe("ok");
    const value = (i: number) =>
      (results[i] as PromiseFulfilledResult<{ sequences: unknown }>).value.sequences;
    expect(value(0)).toEqual(alone.sequences);
    expect(value(5)).toEqual(aloneText.sequences);
    expect(s.kv.stats().usedBlocks).toBe(0);
  });

  it("an image sent to a text-only base model is a clear error", async () => {
    const s = sampler(textBase);
    await expect(s.sample("base", promptWith(IMAGE_A), 1, { maxTokens: 2 })).rejects.toThrow(
      "sample: prompt.chunks[1] is an image, but this base model has no vision input",
    );
    await expect(s.computeLogprobs("base", promptWith(IMAGE_A))).rejects.toThrow(
      "computeLogprobs: sequence.chunks[1] is an image",
    );
  });
});
