// Backward vs central finite differences of the real forward (fp32 kernels), for
// LoRA (attention, MLP and unembedding adapters) and full-parameter policies.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { Rng } from "../rng.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";

let dir: string;
let base: BaseModel;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-grad-"));
  await writeTinyModel(dir, {
    architecture: "qwen2",
    tieWordEmbeddings: true,
    hiddenSize: 16,
    numLayers: 2,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 24,
    seed: 11,
    scale: 0.3,
  });
  base = await loadBaseModel(dir, "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const DATA = [
  buildSftDatum({ sequence: [3, 40, 7, 99, 12, 5], weights: [0, 0, 1, 1, 1, 1] }),
  buildSftDatum({ sequence: [200, 1, 2], weights: [0, 1, 1] }),
];

// fp32 forward: loss errors of ~1e-5 over 2·eps; the checks allow for that.
const EPS = 1e-2;
const tolerance = (analytic: number) => 3e-3 + 0.05 * Math.abs(analytic);

function checkAgainstFiniteDifferences(policy: Policy, entriesPerTensor: number): number {
  const trainer = new Trainer(policy);
  trainer.forwardBackward(DATA, "cross_entropy");
  const loss = () => trainer.forward(DATA, "cross_entropy").metrics["loss:sum"] as number;
  const rng = new Rng(3);
  let checked = 0;
  for (const t of policy.tensors) {
    // The largest-gradient entry plus random ones.
    let largest = 0;
    t.grad.forEach((g, i) => {
      if (Math.abs(g) > Math.abs(t.grad[largest] as number)) largest = i;
    });
    const entries = [
      largest,
      ...Array.from({ length: entriesPerTensor - 1 }, () => Math.floor(rng.next() * t.value.length)),
    ];
    for (const i of entries) {
      const original = t.value[i] as number;
      t.value[i] = original + EPS;
      const up = loss();
      t.value[i] = original - EPS;
      const down = loss();
      t.value[i] = original;
      const fd = (up - down) / (2 * EPS);
      const analytic = t.grad[i] as number;
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
      if (t.name.includes("lora_B")) for (let i = 0; i < t.value.length; i++) t.value[i] = rng.uniform(0.3);
    expect(checkAgainstFiniteDifferences(policy, 3)).toBeGreaterThan(40);
  });

  it("full-parameter, with tied embeddings and q/k/v biases", () => {
    const policy = createFullPolicy(base);
    expect(checkAgainstFiniteDifferences(policy, 3)).toBeGreaterThan(40);
  });
});
