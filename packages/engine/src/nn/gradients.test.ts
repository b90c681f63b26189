// Backward vs central finite differences of the real forward (fp32 kernels), for
// LoRA (attention, MLP and unembedding adapters) and full-parameter policies, and
// through image soft tokens into the vision projection.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildRlDatum, buildSftDatum, type Datum, type LossFn } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import type { TrainableTensor } from "../policy/tensor.ts";
import { Rng } from "../rng.ts";
import { randomImageChunk } from "../testing/images.ts";
import { hostValues, setValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";

let dir: string;
let base: BaseModel;
let vlBase: BaseModel;

const SHAPE = {
  architecture: "qwen2",
  tieWordEmbeddings: true,
  hiddenSize: 16,
  numLayers: 2,
  numHeads: 2,
  numKvHeads: 1,
  intermediateSize: 24,
  seed: 11,
  scale: 0.3,
} as const;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-grad-"));
  await writeTinyModel(path.join(dir, "text"), SHAPE);
  base = await loadBaseModel(path.join(dir, "text"), "tiny");
  // 8×8 images in 4×4 patches: 4 soft tokens from 48 values each.
  await writeTinyModel(path.join(dir, "vl"), { ...SHAPE, vision: { imageSize: 8, patchSize: 4 } });
  vlBase = await loadBaseModel(path.join(dir, "vl"), "tiny-vl");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const DATA = [
  buildSftDatum({ sequence: [3, 40, 7, 99, 12, 5], weights: [0, 0, 1, 1, 1, 1] }),
  buildSftDatum({ sequence: [200, 1, 2], weights: [0, 1, 1] }),
];

// fp32 forward: loss errors of ~1e-5 over 2·eps; the checks allow for that.
const EPS = 1e-2;
const tolerance = (analytic: number) => 3e-3 + 0.05 * Math.abs(analytic);

function checkAgainstFiniteDifferences(
  policy: Policy,
  entriesPerTensor: number,
  data: Datum[] = DATA,
  tensors: readonly TrainableTensor[] = policy.tensors,
  /** Entries to check besides the largest-gradient and random ones, by tensor name. */
  extra: ReadonlyMap<string, number[]> = new Map(),
  lossFn: LossFn = "cross_entropy",
): number {
  const trainer = new Trainer(policy);
  trainer.forwardBackward(data, lossFn, { beta: 0.5 });
  const loss = () => trainer.forward(data, lossFn, { beta: 0.5 }).metrics["loss:sum"] as number;
  const be = policy.params.backend;
  const rng = new Rng(3);
  let checked = 0;
  for (const t of tensors) {
    // forward leaves the gradients as they are: read once.
    const grad = hostValues(policy, t.grad);
    // The largest-gradient entry plus random ones.
    let largest = 0;
    grad.forEach((g, i) => {
      if (Math.abs(g) > Math.abs(grad[largest] as number)) largest = i;
    });
    const entries = [
      largest,
      ...Array.from({ length: entriesPerTensor - 1 }, () => Math.floor(rng.next() * t.value.length)),
      ...(extra.get(t.name) ?? []),
    ];
    for (const i of entries) {
      const original = hostValues(policy, t.value)[i] as number;
      const set = (x: number) => be.write(t.value, Float32Array.of(x), i);
      set(original + EPS);
      const up = loss();
      set(original - EPS);
      const down = loss();
      set(original);
      const fd = (up - down) / (2 * EPS);
      const analytic = grad[i] as number;
      expect(
        Math.abs(fd - analytic),
        `${t.name}[${i}]: finite difference ${fd}, backward ${analytic}`,
      ).toBeLessThan(tolerance(analytic));
      checked++;
    }
  }
  return checked;
}

describe("gradients match finite differences", () => {
  it("LoRA on attention, MLP and unembedding (B made non-zero first)", () => {
    const policy = createLoraPolicy(base, {
      rank: 3,
      alpha: 6,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: true,
      seed: 2,
    });
    const rng = new Rng(9);
    for (const t of policy.tensors)
      if (t.name.includes("lora_B")) setValues(policy, t.value, () => rng.uniform(0.3));
    expect(checkAgainstFiniteDifferences(policy, 3)).toBeGreaterThan(40);
  });

  it("full-parameter, with tied embeddings and q/k/v biases", () => {
    const policy = createFullPolicy(base);
    expect(checkAgainstFiniteDifferences(policy, 3)).toBeGreaterThan(40);
  });

  it("full-parameter under dro (no stop-gradient: its gradient is the loss's own derivative)", () => {
    const policy = createFullPolicy(base);
    // Sampler logprobs away from the policy's, so the quadratic penalty has a gradient.
    const rl = buildRlDatum({
      sequence: [3, 40, 7, 99, 12, 5],
      mask: [0, 0, 1, 1, 1, 1],
      logprobs: [0, 0, -2, -9, -4, -7],
      advantages: [0, 0, 1, -0.5, 0.3, 2],
    });
    expect(checkAgainstFiniteDifferences(policy, 3, [rl], policy.tensors, new Map(), "dro")).toBeGreaterThan(
      40,
    );
  });
});

describe("gradients through image soft tokens match finite differences", () => {
  // An image between text, and one at the very start (no token before it).
  const image = (seed: number) => randomImageChunk(8, seed, 4);
  const VL_DATA = [
    buildSftDatum({
      sequence: {
        input: {
          chunks: [
            { type: "encoded_text", tokens: [3, 40] },
            image(1),
            { type: "encoded_text", tokens: [7, 99, 12] },
          ],
        },
        tokens: [3, 40, 0, 0, 0, 0, 7, 99, 12],
      },
      weights: [0, 0, 0, 0, 0, 0, 1, 1, 1],
    }),
    buildSftDatum({
      sequence: {
        input: { chunks: [image(2), { type: "encoded_text", tokens: [5, 6] }] },
        tokens: [0, 0, 0, 0, 5, 6],
      },
      weights: [0, 0, 0, 0, 1, 1],
    }),
  ];

  it("full-parameter: the patch projection, its bias and the position embedding", () => {
    const policy = createFullPolicy(vlBase);
    const vision = policy.tensors.filter((t) => t.name.startsWith("visual."));
    expect(vision.map((t) => t.name)).toEqual([
      "visual.patch_proj.weight",
      "visual.patch_proj.bias",
      "visual.pos_embed",
    ]);
    expect(checkAgainstFiniteDifferences(policy, 6, VL_DATA, vision)).toBe(18);
  });

  it("full-parameter: the text weights, with images in the batch", () => {
    const policy = createFullPolicy(vlBase);
    const text = policy.tensors.filter((t) => !t.name.startsWith("visual."));
    // The placeholder's embedding row: image positions never read it, so only the (tied) unembedding moves it.
    const H = vlBase.config.hiddenSize;
    const row = (vlBase.config.vision?.imageTokenId ?? 0) * H;
    const extra = new Map([["model.embed_tokens.weight", [row, row + 1, row + H - 1]]]);
    expect(checkAgainstFiniteDifferences(policy, 2, VL_DATA, text, extra)).toBeGreaterThan(20);
  });
});
