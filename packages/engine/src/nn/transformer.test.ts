import { describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { frozenParams } from "../policy/frozen.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { referenceLogprobs } from "../testing/reference-forward.ts";
import { tempDir } from "../testing/temp-dir.ts";
import { type TinyModelOptions, writeTinyModel } from "../testing/tiny-model.ts";
import { pack } from "../trainer/batching.ts";
import { forward } from "./transformer.ts";

const SEQUENCES = [
  [5, 17, 99, 3, 250, 41, 7],
  [280, 33, 12],
];

function batchOf(seqs: number[][]) {
  return pack(
    seqs.map((s) => ({ tokens: Int32Array.from(s.slice(0, -1)), targets: Int32Array.from(s.slice(1)) })),
  );
}

async function model(options: TinyModelOptions): Promise<BaseModel> {
  const dir = await tempDir();
  await writeTinyModel(dir, {
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    intermediateSize: 48,
    seed: 3,
    scale: 0.2,
    ...options,
  });
  return loadBaseModel(dir, "tiny");
}

describe("the transformer forward", () => {
  for (const [name, options] of [
    [
      "qwen2 (q/k/v biases, grouped-query attention, untied)",
      { architecture: "qwen2", tieWordEmbeddings: false },
    ],
    ["llama (tied embeddings)", { architecture: "llama", tieWordEmbeddings: true, numKvHeads: 4 }],
  ] as [string, TinyModelOptions][]) {
    it(`matches the float64 reference within 1e-4: ${name}`, async () => {
      const base = await model(options);
      const { logprobs } = forward(frozenParams(base), batchOf(SEQUENCES));
      const expected = SEQUENCES.flatMap((s) =>
        referenceLogprobs(base.config, base.weights, base.rope, s.slice(0, -1), s.slice(1)),
      );
      expect(logprobs.length).toBe(expected.length);
      logprobs.forEach((lp, i) => {
        expect(Math.abs(lp - (expected[i] as number))).toBeLessThan(1e-4);
      });
    });
  }

  it("packed sequences do not see each other: each equals its own single-sequence forward", async () => {
    const base = await model({});
    const packed = forward(frozenParams(base), batchOf(SEQUENCES)).logprobs;
    const alone = SEQUENCES.flatMap((s) => Array.from(forward(frozenParams(base), batchOf([s])).logprobs));
    packed.forEach((lp, i) => {
      expect(lp).toBeCloseTo(alone[i] as number, 5);
    });
  });

  it("bf16 and f16 checkpoints give the f32 model's logprobs within their precision", async () => {
    const f32 = forward(frozenParams(await model({ dtype: "F32" })), batchOf(SEQUENCES)).logprobs;
    for (const [dtype, tolerance] of [
      ["F16", 5e-3],
      ["BF16", 5e-2],
    ] as const) {
      const low = forward(frozenParams(await model({ dtype })), batchOf(SEQUENCES)).logprobs;
      low.forEach((lp, i) => {
        expect(Math.abs(lp - (f32[i] as number))).toBeLessThan(tolerance);
      });
    }
  });

  it("a new LoRA adapter (B = 0) gives exactly the base model's logprobs", async () => {
    const base = await model({});
    const lora = createLoraPolicy(base, {
      rank: 4,
      alpha: 8,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: true,
      seed: 1,
    });
    const batch = batchOf(SEQUENCES);
    expect(Array.from(forward(lora.params, batch).logprobs)).toEqual(
      Array.from(forward(frozenParams(base), batch).logprobs),
    );
  });
});
