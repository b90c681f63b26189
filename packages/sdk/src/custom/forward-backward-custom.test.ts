import type { InProcessServiceClient } from "@opentinker/engine";
import { buildSftDatum, type Datum } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyService } from "../testing/index.ts";
import { forwardBackwardCustom } from "./forward-backward-custom.ts";

let service: InProcessServiceClient;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ service, cleanup } = await tinyService());
});
afterAll(() => cleanup());

const data: Datum[] = [
  buildSftDatum({ sequence: [5, 6, 7, 8, 9], weights: [0, 1, 1, 1, 1] }),
  buildSftDatum({ sequence: [11, 12, 13], weights: [0, 1, 1] }),
];

const logprobsOf = async (tc: Awaited<ReturnType<typeof service.createLoraTrainingClient>>) =>
  (await (await tc.forward(data, "cross_entropy")).result()).lossFnOutputs.map((o) => o.logprobs?.data ?? []);

describe("forwardBackwardCustom", () => {
  it("with −Σ logprob as the loss, takes exactly the step a cross_entropy forwardBackward takes", async () => {
    const custom = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 3 });
    const plain = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 3 });
    const out = await forwardBackwardCustom(custom, data, (logprobs) => ({
      loss: -logprobs.flat().reduce((a, b) => a + b, 0),
      grad: logprobs.map((row) => row.map(() => -1)),
    }));
    const allWeights = data.map((d) => ({
      ...d,
      lossFnInputs: {
        ...d.lossFnInputs,
        weights: { dtype: "float32" as const, data: (d.lossFnInputs.weights?.data ?? []).map(() => 1) },
      },
    }));
    const reference = await (await plain.forwardBackward(allWeights, "cross_entropy")).result();
    expect(out.metrics["custom_loss:sum"]).toBeCloseTo(reference.metrics["loss:sum"] as number, 4);
    await (await custom.optimStep({ learningRate: 1e-2 })).result();
    await (await plain.optimStep({ learningRate: 1e-2 })).result();
    const [a, b] = [await logprobsOf(custom), await logprobsOf(plain)];
    for (const [i, row] of a.entries())
      for (const [j, v] of row.entries()) expect(v).toBeCloseTo(b[i]?.[j] as number, 5);
  });

  it("lowers a loss of the caller's own over a few steps", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 1 });
    // Pull every logprob towards −1: loss Σ (lp + 1)², gradient 2 (lp + 1).
    const loss = (logprobs: number[][]) => ({
      loss: logprobs.flat().reduce((s, lp) => s + (lp + 1) ** 2, 0),
      grad: logprobs.map((row) => row.map((lp) => 2 * (lp + 1))),
    });
    const losses: number[] = [];
    for (let step = 0; step < 8; step++) {
      const out = await forwardBackwardCustom(tc, data, loss);
      losses.push(out.metrics["custom_loss:sum"] as number);
      await (await tc.optimStep({ learningRate: 2e-2 })).result();
    }
    expect(losses.at(-1)).toBeLessThan((losses[0] as number) * 0.5);
  });

  it("refuses a gradient that does not match the targets", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 1 });
    await expect(forwardBackwardCustom(tc, data, () => ({ loss: 0, grad: [[1]] }))).rejects.toThrow(
      /grad has 1 arrays for 2 datums/,
    );
    await expect(forwardBackwardCustom(tc, data, () => ({ loss: 0, grad: [[1], [1, 1]] }))).rejects.toThrow(
      /grad 0 has 1 values for 4 targets/,
    );
  });
});
