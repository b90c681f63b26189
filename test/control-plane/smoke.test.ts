import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("alpha");
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

describe("control plane, end to end", () => {
  it("creates an adapter, trains a step, publishes, and samples from the snapshot", async () => {
    const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "a1",
      baseModel: BASE,
      rank: 4,
      seed: 3,
    });
    expect(created.body).toMatchObject({ name: "a1" });
    expect(created.status).toBe(200);
    const adapterId = created.body.id;
    const datum = {
      modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
      lossFnInputs: {
        targetTokens: { dtype: "int64", data: [20, 30, 40] },
        weights: { dtype: "float32", data: [1, 1, 1] },
      },
    };
    const fb = await cp.call<{ metrics: Record<string, number> }>(team.key, "/v1/training/forward-backward", {
      adapterId,
      data: [datum],
      lossFn: "cross_entropy",
    });
    expect(fb.metrics["loss:sum"]).toBeGreaterThan(0);
    await cp.call(team.key, "/v1/training/optim-step", { adapterId, adam: { learningRate: 0.01 } });
    const saved = await cp.call<{ handle: string; version: number }>(
      team.key,
      "/v1/training/save-weights-for-sampler",
      { adapterId },
    );
    expect(saved.version).toBe(1);
    const sample = await cp.call<{ sequences: { tokens: number[] }[] }>(team.key, "/v1/sampling/sample", {
      policy: { handle: saved.handle },
      prompt: { chunks: [{ type: "encoded_text", tokens: [10, 20] }] },
      numSamples: 2,
      params: { maxTokens: 4, seed: 1 },
    });
    expect(sample.sequences).toHaveLength(2);
    expect(sample.sequences[0]?.tokens).toHaveLength(4);
  }, 60_000);
});
