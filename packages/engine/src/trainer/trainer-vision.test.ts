// Training on datums whose model input holds images (a vision-language base).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  buildRlDatum,
  buildSftDatum,
  type Datum,
  type ImageChunk,
  type Sequence,
} from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { randomImageChunk } from "../testing/images.ts";
import { hostValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "./trainer.ts";

const SHAPE = { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 48, seed: 5 };
let base: BaseModel;
let textBase: BaseModel;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-trainer-vl-"));
  // 16×16 images in 4×4 patches: 16 soft tokens each.
  await writeTinyModel(`${dir}/vl`, { ...SHAPE, scale: 0.2, vision: { imageSize: 16, patchSize: 4 } });
  base = await loadBaseModel(`${dir}/vl`, "tiny-vl");
  await writeTinyModel(`${dir}/text`, { ...SHAPE, scale: 0.2 });
  textBase = await loadBaseModel(`${dir}/text`, "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const IMAGE_A = randomImageChunk(16, 1, 16);
const IMAGE_B = randomImageChunk(16, 2, 16);

/** [image][prompt tokens][answer tokens]: the SDK's layout for an image observation. */
function sequenceOf(image: ImageChunk, prompt: number[], answer: number[]): Sequence {
  return {
    input: { chunks: [image, { type: "encoded_text", tokens: [...prompt, ...answer] }] },
    tokens: [...new Array<number>(16).fill(0), ...prompt, ...answer],
  };
}

function sft(image: ImageChunk, answer: number[]): Datum {
  const seq = sequenceOf(image, [40, 41], answer);
  return buildSftDatum({ sequence: seq, weights: seq.tokens.map((_, i) => (i >= 18 ? 1 : 0)) });
}

/** Same question, different pictures, different answers: only the image tells them apart. */
const DATA = [sft(IMAGE_A, [7, 8]), sft(IMAGE_B, [200, 201])];

const VISION_NAMES = ["visual.patch_proj.weight", "visual.patch_proj.bias", "visual.pos_embed"];

function train(policy: Policy, data: Datum[], steps: number, learningRate: number): Trainer {
  const trainer = new Trainer(policy);
  for (let s = 0; s < steps; s++) {
    trainer.forwardBackward(data, "cross_entropy");
    trainer.optimStep({ learningRate });
  }
  return trainer;
}

describe("training with images", () => {
  it("full-parameter: learns to answer from the picture, and the projection and position embedding move", () => {
    const policy = createFullPolicy(base);
    const vision = policy.tensors.filter((t) => VISION_NAMES.includes(t.name));
    expect(vision.map((t) => t.name)).toEqual(VISION_NAMES);
    const before = vision.map((t) => hostValues(policy, t.value));
    const trainer = train(policy, DATA, 30, 1e-2);
    vision.forEach((t, i) => {
      expect(hostValues(policy, t.value), t.name).not.toEqual(before[i]);
    });
    // Each picture's own answer is now far likelier than the other picture's.
    const answerLogprob = (image: ImageChunk, answer: number[]) => {
      const out = trainer.forward([sft(image, answer)], "cross_entropy");
      return out.metrics["loss:sum"] as number;
    };
    expect(answerLogprob(IMAGE_A, [7, 8])).toBeLessThan(answerLogprob(IMAGE_A, [200, 201]) - 2);
    expect(answerLogprob(IMAGE_B, [200, 201])).toBeLessThan(answerLogprob(IMAGE_B, [7, 8]) - 2);
  });

  it("LoRA: the vision part stays frozen (no trainable vision tensors, base weights untouched) while the loss falls", () => {
    const frozen = base.weights.vision;
    if (!frozen) throw new Error("no vision weights");
    const copies = [frozen.patchProj, frozen.patchBias, frozen.posEmbed].map((w) => Float32Array.from(w));
    const policy = createLoraPolicy(base, {
      rank: 4,
      alpha: 8,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: false,
      seed: 3,
    });
    expect(policy.tensors.some((t) => t.name.includes("visual"))).toBe(false);
    const onDevice = policy.params.vision;
    if (!onDevice) throw new Error("the LoRA policy has no vision part");
    const deviceValues = () =>
      [onDevice.proj.weight, onDevice.proj.bias, onDevice.posEmbed.value].map((b) =>
        b ? policy.params.backend.download(b).slice() : undefined,
      );
    expect(deviceValues()).toEqual(copies);
    const first = new Trainer(policy).forward(DATA, "cross_entropy").metrics["loss:sum"] as number;
    const trainer = train(policy, DATA, 10, 1e-2);
    expect(trainer.forward(DATA, "cross_entropy").metrics["loss:sum"]).toBeLessThan(first * 0.8);
    expect([frozen.patchProj, frozen.patchBias, frozen.posEmbed]).toEqual(copies);
    // The buffers the forward pass read (on a device, not the host arrays above) are untouched too.
    expect(deviceValues()).toEqual(copies);
  });

  it("image positions carry no loss: their logprobs are reported as 0, a weight on them is an error", () => {
    const trainer = new Trainer(createFullPolicy(base));
    const [logprobs] = trainer
      .forward(DATA, "cross_entropy")
      .lossFnOutputs.map((o) => o.logprobs?.data ?? []);
    // 19 targets: 15 inside the image (positions 1..15), then the prompt and the answer.
    expect(logprobs?.slice(0, 15)).toEqual(new Array(15).fill(0));
    expect(logprobs?.slice(15).every((lp) => lp < 0)).toBe(true);
    const seq = sequenceOf(IMAGE_A, [40, 41], [7, 8]);
    const weighted = buildSftDatum({ sequence: seq, weights: seq.tokens.map((_, i) => (i >= 3 ? 1 : 0)) });
    expect(() => trainer.forwardBackward([weighted], "cross_entropy")).toThrow(
      "forwardBackward: data[0]: lossFnInputs.weights[2] is 1, but target 2 is an image position",
    );
    expect(trainer.policy.hasGrad).toBe(false);
  });

  it("importance_sampling and ppo train on image datums unchanged", () => {
    for (const lossFn of ["importance_sampling", "ppo"] as const) {
      const trainer = new Trainer(createFullPolicy(base));
      const seq = sequenceOf(IMAGE_A, [40, 41], [7, 8]);
      const datum = buildRlDatum({
        sequence: seq,
        mask: seq.tokens.map((_, i) => (i >= 18 ? 1 : 0)),
        logprobs: seq.tokens.map((_, i) => (i >= 18 ? -5 : 0)),
        advantages: 1,
      });
      const out = trainer.forwardBackward([datum], lossFn);
      expect(out.metrics["tokens:sum"]).toBe(2);
      const proj = trainer.policy.tensors.find((t) => t.name === "visual.patch_proj.weight");
      expect(proj && hostValues(trainer.policy, proj.grad).some((g) => g !== 0)).toBe(true);
    }
  });

  it("an image sent to a text-only base model is a clear error", () => {
    expect(() => new Trainer(createFullPolicy(textBase)).forward(DATA, "cross_entropy")).toThrow(
      "forward: data[0]: modelInput.chunks[0] is an image, but this base model has no vision input",
    );
  });
});
