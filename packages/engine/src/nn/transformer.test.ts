import { WEIGHT_DTYPES, type WeightDtype } from "@opentinker/kernels";
import type { ModelInput } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { frozenParams } from "../policy/frozen.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { randomImageChunk } from "../testing/images.ts";
import { referenceLogprobs } from "../testing/reference-forward.ts";
import { tempDir } from "../testing/temp-dir.ts";
import { type TinyModelOptions, writeTinyModel } from "../testing/tiny-model.ts";
import { pack } from "../trainer/batching.ts";
import { prepareInput } from "../vision/input.ts";
import { Arena } from "./arena.ts";
import type { ModelParams } from "./params.ts";
import { forward, type PackedBatch } from "./transformer.ts";

const SEQUENCES = [
  [5, 17, 99, 3, 250, 41, 7],
  [280, 33, 12],
];

function batchOf(seqs: number[][]) {
  return pack(
    seqs.map((s) => ({ tokens: Int32Array.from(s.slice(0, -1)), targets: Int32Array.from(s.slice(1)) })),
  );
}

/** The forward's logprobs, on the host (the pass's buffers released). */
function logprobsOf(params: ModelParams, batch: PackedBatch): Float32Array {
  const arena = new Arena(params.backend);
  try {
    return Float32Array.from(params.backend.download(forward(params, batch, arena).logprobs));
  } finally {
    arena.release();
  }
}

async function model(options: TinyModelOptions, weightDtype: WeightDtype = "f32"): Promise<BaseModel> {
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
  return loadBaseModel(dir, "tiny", { weightDtype });
}

describe("the transformer forward", () => {
  for (const [name, options] of [
    [
      "qwen2 (q/k/v biases, grouped-query attention, untied)",
      { architecture: "qwen2", tieWordEmbeddings: false },
    ],
    ["llama (tied embeddings)", { architecture: "llama", tieWordEmbeddings: true, numKvHeads: 4 }],
  ] as [string, TinyModelOptions][]) {
    it.each(WEIGHT_DTYPES)(
      `matches the float64 reference within 1e-4: ${name}, %s base weights`,
      async (dtype) => {
        const base = await model(options, dtype);
        const logprobs = logprobsOf(frozenParams(base), batchOf(SEQUENCES));
        const expected = SEQUENCES.flatMap((s) =>
          referenceLogprobs(base.config, base.weights, base.rope, s.slice(0, -1), s.slice(1)),
        );
        expect(logprobs.length).toBe(expected.length);
        logprobs.forEach((lp, i) => {
          expect(Math.abs(lp - (expected[i] as number))).toBeLessThan(1e-4);
        });
      },
    );
  }

  it("packed sequences do not see each other: each equals its own single-sequence forward", async () => {
    const base = await model({});
    const packed = logprobsOf(frozenParams(base), batchOf(SEQUENCES));
    const alone = SEQUENCES.flatMap((s) => Array.from(logprobsOf(frozenParams(base), batchOf([s]))));
    packed.forEach((lp, i) => {
      expect(lp).toBeCloseTo(alone[i] as number, 5);
    });
  });

  it("bf16 and f16 checkpoints give the f32 model's logprobs within their precision", async () => {
    const f32 = logprobsOf(frozenParams(await model({ dtype: "F32" })), batchOf(SEQUENCES));
    for (const [dtype, tolerance] of [
      ["F16", 5e-3],
      ["BF16", 5e-2],
    ] as const) {
      const low = logprobsOf(frozenParams(await model({ dtype })), batchOf(SEQUENCES));
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
    const [withLora, without] = [logprobsOf(lora.params, batch), logprobsOf(frozenParams(base), batch)];
    // The CPU's products share one order of sums whichever path they take; on a
    // device the LoRA path (materialised logits) and the fused unembedding sum
    // in different orders, so there it is f32 rounding, not bits.
    if (base.backend.device.kind === "cpu") expect(Array.from(withLora)).toEqual(Array.from(without));
    for (const [i, lp] of withLora.entries())
      expect(Math.abs(lp - (without[i] as number))).toBeLessThan(1e-5);
  });
});

describe("the transformer forward with images", () => {
  // 8×8 images in 4×4 patches: 4 soft tokens each. Token ids at image positions are placeholders.
  async function vlModel(): Promise<BaseModel> {
    return model({ architecture: "qwen2", tieWordEmbeddings: false, vision: { imageSize: 8, patchSize: 4 } });
  }

  function prepared(base: BaseModel, chunks: ModelInput["chunks"]) {
    return prepareInput({ chunks }, base.config, "test");
  }

  it("matches the float64 reference within 1e-4, soft tokens in place of the placeholders", async () => {
    const base = await vlModel();
    const input = prepared(base, [
      { type: "encoded_text", tokens: [5, 17] },
      randomImageChunk(8, 1, 4),
      { type: "encoded_text", tokens: [99, 3] },
      randomImageChunk(8, 2, 4),
      { type: "encoded_text", tokens: [41, 7] },
    ]);
    const tokens = Array.from(input.tokens);
    const batch = pack([
      {
        tokens: input.tokens.slice(0, -1),
        targets: input.tokens.slice(1),
        images: input.images,
      },
    ]);
    const logprobs = logprobsOf(frozenParams(base), batch);
    const expected = referenceLogprobs(
      base.config,
      base.weights,
      base.rope,
      tokens.slice(0, -1),
      tokens.slice(1),
      input.images,
    );
    logprobs.forEach((lp, i) => {
      expect(Math.abs(lp - (expected[i] as number))).toBeLessThan(1e-4);
    });
    // The image changes the outputs after it (it is not the placeholder's embedding).
    const textOnly = logprobsOf(frozenParams(base), { ...batch, images: undefined });
    expect(Math.abs((textOnly.at(-1) as number) - (logprobs.at(-1) as number))).toBeGreaterThan(1e-3);
  });

  it("a sequence that ends inside an image keeps the image's leading soft tokens", async () => {
    const base = await vlModel();
    const input = prepared(base, [{ type: "encoded_text", tokens: [5] }, randomImageChunk(8, 3, 4)]);
    // Input positions 0..2: the token and the image's first two soft tokens.
    const batch = pack([
      { tokens: input.tokens.slice(0, 3), targets: input.tokens.slice(1, 4), images: input.images },
    ]);
    expect(batch.images?.map((i) => [i.row, i.count])).toEqual([[1, 2]]);
    const logprobs = logprobsOf(frozenParams(base), batch);
    const tokens = Array.from(input.tokens);
    const expected = referenceLogprobs(
      base.config,
      base.weights,
      base.rope,
      tokens.slice(0, 3),
      tokens.slice(1, 4),
      input.images,
    );
    logprobs.forEach((lp, i) => {
      expect(Math.abs(lp - (expected[i] as number))).toBeLessThan(1e-4);
    });
  });

  it("a text-only batch carries no images", () => {
    expect(batchOf(SEQUENCES).images).toBeUndefined();
  });
});
