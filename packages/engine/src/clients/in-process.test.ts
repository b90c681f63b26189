import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildSftDatum, modelInputFromTokens } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { TINY_MODEL, writeTinyModel } from "../testing/tiny-model.ts";
import { OrderedQueue } from "./futures.ts";
import { InProcessServiceClient } from "./in-process.ts";

let dir: string;
let base: BaseModel;
let service: InProcessServiceClient;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-clients-"));
  await writeTinyModel(path.join(dir, "model"), TINY_MODEL);
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
  service = InProcessServiceClient.local([base], path.join(dir, "store"), "demo", {
    kvCacheBytes: 4 << 20,
    blockSize: 4,
  });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const DATA = [buildSftDatum({ sequence: [5, 6, 7, 8, 9], weights: [0, 0, 1, 1, 1] })];

describe("in-process clients", () => {
  it("forwardBackward and optimStep queue back to back and complete in order", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 1 });
    const futures = [];
    for (let i = 0; i < 3; i++) {
      futures.push(await tc.forwardBackward(DATA, "cross_entropy"));
      futures.push(await tc.optimStep({ learningRate: 1e-2 }));
    }
    const steps = [];
    for (const [i, f] of futures.entries()) {
      const out = await f.result();
      if (i % 2 === 1) steps.push((out.metrics as Record<string, number>)["step:value"]);
    }
    expect(steps).toEqual([1, 2, 3]);
  });

  it("a failing call fails only its own future; later calls still run", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2 });
    const bad = await tc.optimStep(); // no gradients yet
    const good = await tc.forwardBackward(DATA, "cross_entropy");
    await expect(bad.result()).rejects.toThrow(/no gradients/);
    expect((await good.result()).lossFnOutputs).toHaveLength(1);
  });

  it("a sampling client over saved weights samples that version; the base is sampled by name", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 4, seed: 2 });
    for (let i = 0; i < 30; i++) {
      await tc.forwardBackward(DATA, "cross_entropy");
      await tc.optimStep({ learningRate: 3e-2 });
    }
    const saved = await (await tc.saveWeightsForSampler("step-30")).result();
    expect(saved.handle).toMatch(/^opentinker:\/\/demo\/adapter-\d+\/sampler\/1$/);
    const sc = await service.createSamplingClient({ handle: saved.handle });
    const out = await (
      await sc.sample(modelInputFromTokens([5, 6]), 1, { maxTokens: 3, temperature: 0 })
    ).result();
    expect(out.sequences[0]?.tokens).toEqual([7, 8, 9]);
    const baseClient = await service.createSamplingClient({ baseModel: "tiny" });
    const baseOut = await (
      await baseClient.sample(modelInputFromTokens([5, 6]), 1, { maxTokens: 3, temperature: 0 })
    ).result();
    expect(baseOut.sequences[0]?.tokens).not.toEqual([7, 8, 9]);
    expect(sc.getTokenizer().decode([72, 105])).toBe("Hi");
  });

  it("saveState and loadState round-trip through the client", async () => {
    const tc = await service.createLoraTrainingClient({ baseModel: "tiny", rank: 2, seed: 4 });
    await tc.forwardBackward(DATA, "cross_entropy");
    await tc.optimStep({ learningRate: 1e-2 });
    const saved = await (await tc.saveState("ckpt")).result();
    const before = (await (await tc.forward(DATA, "cross_entropy")).result()).metrics["loss:sum"];
    await tc.forwardBackward(DATA, "cross_entropy");
    await tc.optimStep({ learningRate: 1e-1 });
    await (await tc.loadState(saved.path)).result();
    const after = (await (await tc.forward(DATA, "cross_entropy")).result()).metrics["loss:sum"];
    expect(after).toBe(before);
  });

  it("an unknown base model is refused by name", async () => {
    await expect(service.createLoraTrainingClient({ baseModel: "nope", rank: 2 })).rejects.toThrow(
      /unknown base model "nope"/,
    );
  });
});

describe("OrderedQueue", () => {
  it("runs work strictly in submission order, even when earlier work is slower", async () => {
    const q = new OrderedQueue();
    const log: number[] = [];
    const slow = q.submit(async () => {
      await new Promise((r) => setTimeout(r, 20));
      log.push(1);
    });
    const fast = q.submit(() => {
      log.push(2);
    });
    await Promise.all([slow.result(), fast.result()]);
    expect(log).toEqual([1, 2]);
  });
});
