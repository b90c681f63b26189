// The device seam's proof (issue 45): on the strict backend, whose buffers refuse
// host access except through download and which logs every transfer, a training
// call and a sampling call see no download between their inputs and their
// results. What comes back is per token (logprobs, sampled tokens, a scored
// row's top-k), never activations or a row of logits; the gradient norm is one
// scalar. The engine's whole sampler and trainer suites also run on this backend
// (the "strict-backend" project in vitest.config.ts).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { StrictBackend, type Transfer } from "@opentinker/kernels/testing";
import { buildRlDatum, buildSftDatum, type Datum, type LossFn, type ModelInput } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "./base-model.ts";
import { createFullPolicy } from "./policy/full-policy.ts";
import { createLoraPolicy } from "./policy/lora-policy.ts";
import type { Policy } from "./policy/policy.ts";
import { Sampler } from "./sampler/sampler.ts";
import { snapshotFiles } from "./snapshots/peft.ts";
import { InMemorySnapshotRegistry } from "./snapshots/registry.ts";
import { restoreState, stateFiles } from "./snapshots/state.ts";
import { randomImageChunk } from "./testing/images.ts";
import { writeTinyModel } from "./testing/tiny-model.ts";
import { Trainer } from "./trainer/trainer.ts";

const SHAPE = { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 48, scale: 0.3 };
const LORA = { rank: 4, alpha: 8, trainAttn: true, trainMlp: true, trainUnembed: true, seed: 1 };
const LOSSES: LossFn[] = ["cross_entropy", "importance_sampling", "ppo", "cispo", "dro"];

const be = new StrictBackend();
let dir: string;
let base: BaseModel;
let store: LocalStore;
const registry = new InMemorySnapshotRegistry();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-strict-seam-"));
  await writeTinyModel(path.join(dir, "vl"), { ...SHAPE, seed: 4, vision: { imageSize: 16, patchSize: 4 } });
  base = await loadBaseModel(path.join(dir, "vl"), "tiny-vl", { backend: be });
  store = new LocalStore(path.join(dir, "snapshots"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const downloads = (log: Transfer[]) => log.filter((t) => t.direction === "download");
const elements = (t: Transfer) => t.shape.reduce((a, b) => a * b, 1);

/** A text datum for `loss`: SFT weights for cross_entropy, an RL datum otherwise. */
function datum(loss: LossFn, tokens: number[]): Datum {
  if (loss === "cross_entropy")
    return buildSftDatum({ sequence: tokens, weights: tokens.map((_, i) => (i > 2 ? 1 : 0)) });
  const mask = tokens.map((_, i) => (i > 2 ? 1 : 0));
  return buildRlDatum({
    sequence: tokens,
    mask,
    logprobs: tokens.map((_, i) => (i > 2 ? -2 : 0)),
    advantages: 1,
  });
}

const IMAGE = randomImageChunk(16, 1, 16);
const imageDatum = (): Datum => {
  const tokens = [10, 20, ...new Array<number>(16).fill(0), 30, 40, 50];
  return buildSftDatum({
    sequence: {
      input: {
        chunks: [
          { type: "encoded_text", tokens: [10, 20] },
          IMAGE,
          { type: "encoded_text", tokens: [30, 40, 50] },
        ],
      },
      tokens,
    },
    weights: tokens.map((_, i) => (i >= 19 ? 1 : 0)),
  });
};

/** Runs a call and returns the transfers it made (after clearing those before it). */
function transfersOf(call: () => unknown): Transfer[] {
  be.takeTransfers();
  call();
  return be.takeTransfers();
}

describe("a training step on the strict backend", () => {
  for (const make of [(b: BaseModel) => createLoraPolicy(b, LORA), (b: BaseModel) => createFullPolicy(b)]) {
    it(`downloads only per-token logprobs in forwardBackward, one scalar in optimStep (${make.name || "policy"})`, () => {
      const policy: Policy = make(base);
      const trainer = new Trainer(policy);
      for (const loss of LOSSES) {
        const data = [datum(loss, [1, 2, 3, 4, 5, 6, 7]), datum(loss, [8, 9, 10, 11, 12])];
        const tokens = 6 + 4;
        const log = transfersOf(() =>
          trainer.forwardBackward(data, loss, { referenceKl: loss === "ppo" ? 0.1 : 0 }),
        );
        const down = downloads(log);
        // The logprobs [T] (and with a reference KL, its per-token values [T]): nothing wider.
        expect(down.length, loss).toBeGreaterThan(0);
        for (const t of down)
          expect(elements(t), `${loss}: a download of [${t.shape}]`).toBeLessThanOrEqual(tokens);
      }
      const vision = transfersOf(() => trainer.forwardBackward([imageDatum()], "cross_entropy"));
      for (const t of downloads(vision)) expect(elements(t)).toBeLessThanOrEqual(20);
      const step = downloads(transfersOf(() => trainer.optimStep({ learningRate: 1e-2 })));
      expect(step.map(elements)).toEqual([1]);
    });
  }

  it("a checkpoint's save is downloads of the tensors and its load uploads them: bit-identical next step", () => {
    const policy = createLoraPolicy(base, LORA);
    const trainer = new Trainer(policy);
    trainer.forwardBackward([datum("cross_entropy", [1, 2, 3, 4, 5])], "cross_entropy");
    trainer.optimStep({ learningRate: 1e-2 });
    const files = stateFiles(policy);
    // Same spec (its metadata is compared too), untrained: only the restore makes it the trained one.
    const twin = createLoraPolicy(base, LORA);
    const log = transfersOf(() => restoreState(twin, files, "checkpoint"));
    expect(downloads(log)).toEqual([]);
    const next = (p: Policy) => {
      const t = new Trainer(p);
      t.forwardBackward([datum("cross_entropy", [5, 4, 3, 2, 1])], "cross_entropy");
      t.optimStep({ learningRate: 1e-2 });
      return [...stateFiles(p).values()][0];
    };
    twin.step = policy.step;
    expect(Buffer.from(next(twin) as Uint8Array).equals(Buffer.from(next(policy) as Uint8Array))).toBe(true);
  });
});

describe("a sampling step on the strict backend", () => {
  it("brings back only tokens, their logprobs and scored rows' top-k: never a row of logits", async () => {
    const handles: string[] = [];
    for (let i = 0; i < 3; i++) {
      const policy = createLoraPolicy(base, { ...LORA, seed: 10 + i });
      const trainer = new Trainer(policy);
      trainer.forwardBackward([datum("cross_entropy", [1, 2, 3, 4, 5 + i])], "cross_entropy");
      trainer.optimStep({ learningRate: 5e-2 });
      const stored = await store.put(`demo/a${i}/1`, snapshotFiles(policy));
      handles.push((await registry.publish("demo", `a${i}`, stored, 1)).handle);
    }
    const sampler = new Sampler({ base, store, registry, kvCacheBytes: 8 << 20, blockSize: 4 });
    // Load the adapters first: their uploads are not a step's.
    for (const h of handles) await sampler.sample(h, [1, 2], 1, { maxTokens: 1, seed: 0 });
    be.takeTransfers();
    const withImage: ModelInput = {
      chunks: [{ type: "encoded_text", tokens: [10, 20] }, IMAGE, { type: "encoded_text", tokens: [30] }],
    };
    const calls = [
      ...handles.map((h, i) =>
        sampler.sample(h, [1, 2, 3, 4 + i], 3, { maxTokens: 5, temperature: 1, seed: i }),
      ),
      sampler.sample("base", withImage, 2, { maxTokens: 4, topK: 5, topP: 0.9, seed: 7 }),
      sampler.sample(
        handles[0] as string,
        [5, 6, 7, 8, 9],
        1,
        { maxTokens: 3, seed: 1 },
        { topkPromptLogprobs: 2 },
      ),
    ];
    const results = await Promise.all(calls);
    expect(results.every((r) => r.sequences.length > 0)).toBe(true);
    const down = downloads(be.takeTransfers());
    expect(down.length).toBeGreaterThan(0);
    const vocab = base.config.vocabSize;
    // A step's draws or scored rows, each a token, a logprob or a row's top 2: far below one row of logits.
    for (const t of down) expect(elements(t), `a download of [${t.shape}] ${t.dtype}`).toBeLessThan(vocab);
    const logprobs = await sampler.computeLogprobs(handles[1] as string, [1, 2, 3, 4, 5]);
    expect(logprobs.slice(1).every((lp) => typeof lp === "number" && lp < 0)).toBe(true);
    for (const t of downloads(be.takeTransfers())) expect(elements(t)).toBeLessThanOrEqual(4);
  });
});
