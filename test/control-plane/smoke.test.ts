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
    // A KL to the snapshot just published (the worker loads it by handle, within the team) is 0; to the base it is not.
    const klTo = async (config: object) => {
      const fb = await cp.call<{ metrics: Record<string, number> }>(
        team.key,
        "/v1/training/forward-backward",
        {
          adapterId,
          data: [datum],
          lossFn: "cross_entropy",
          lossFnConfig: { referenceKl: 0.5, ...config },
        },
      );
      return fb.metrics["reference_kl:mean"];
    };
    expect(await klTo({ referenceModel: saved.handle })).toBeCloseTo(0, 6);
    expect(await klTo({})).toBeGreaterThan(1e-6);
  }, 60_000);
});

describe("the rest of the API surface", () => {
  const datum = {
    modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
    lossFnInputs: {
      targetTokens: { dtype: "int64", data: [20, 30, 40] },
      weights: { dtype: "float32", data: [1, 1, 1] },
    },
  };

  it("orders an adapter's calls by seq, downloads a snapshot as PEFT files, and serves full-parameter adapters", async () => {
    const lora = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "peft",
      baseModel: BASE,
      rank: 2,
    });
    const calls = [];
    for (let i = 0; i < 3; i++)
      calls.push(
        await cp.api<{ requestId: string; seq: number }>(team.key, "POST", "/v1/training/forward", {
          adapterId: lora.body.id,
          data: [datum],
          lossFn: "cross_entropy",
        }),
      );
    expect(calls.map((c) => c.body.seq)).toEqual([1, 2, 3]);
    const state = await cp.api<{ status: string }>(
      team.key,
      "GET",
      `/v1/futures/${calls[0]?.body.requestId}`,
    );
    expect(["QUEUED", "RUNNING", "SUCCEEDED"]).toContain(state.body.status);
    const saved = await cp.call<{ handle: string }>(team.key, "/v1/training/save-weights-for-sampler", {
      adapterId: lora.body.id,
    });
    const download = await cp.api<{ files: Record<string, string> }>(
      team.key,
      "GET",
      `/v1/snapshots/download?handle=${encodeURIComponent(saved.handle)}`,
    );
    expect(Object.keys(download.body.files).sort()).toEqual([
      "adapter_config.json",
      "adapter_model.safetensors",
    ]);
    const config = JSON.parse(
      Buffer.from(download.body.files["adapter_config.json"] as string, "base64").toString(),
    );
    expect(config.r).toBe(2);

    const full = await cp.api<{ id: string; kind: string }>(team.key, "POST", "/v1/adapters", {
      name: "full",
      baseModel: BASE,
      kind: "FULL",
    });
    expect(full.body.kind).toBe("FULL");
    await cp.call(team.key, "/v1/training/forward-backward", {
      adapterId: full.body.id,
      data: [datum],
      lossFn: "cross_entropy",
    });
    await cp.call(team.key, "/v1/training/optim-step", {
      adapterId: full.body.id,
      adam: { learningRate: 0.01 },
    });
    const fullSaved = await cp.call<{ handle: string }>(team.key, "/v1/training/save-weights-for-sampler", {
      adapterId: full.body.id,
    });
    const logprobs = await cp.call<(number | null)[]>(team.key, "/v1/sampling/compute-logprobs", {
      policy: { handle: fullSaved.handle },
      sequence: datum.modelInput,
    });
    expect(logprobs).toHaveLength(3);
    expect(logprobs[0]).toBeNull();
  }, 60_000);

  it("publishes an OpenAPI document of the REST surface", async () => {
    const response = await fetch(`${cp.url}/api/openapi.json`);
    const doc = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      "/v1/adapters",
      "/v1/training/forward-backward",
      "/v1/sampling/sample",
      "/v1/futures/{requestId}/wait",
      "/v1/jobs",
    ])
      expect(Object.keys(doc.paths)).toContain(path);
  });
});
