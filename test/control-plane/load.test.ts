// Load: 50 concurrent sample requests over 20 adapters of 4 teams, served by two
// workers, each answered from the right adapter (the same tokens as the same
// adapter trained and sampled in-process).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import {
  buildSftDatum,
  type Datum,
  modelInputFromTokens,
  type SamplingClient,
  type ServiceClient,
} from "@opentinker/protocol";
import { RemoteServiceClient } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let teams: Team[];
beforeAll(async () => {
  cp = await ControlPlane.start();
  teams = await Promise.all(["t1", "t2", "t3", "t4"].map((slug) => cp.team(slug)));
  await cp.startWorker({ WORKER_CAPACITY: "12" });
  await cp.startWorker({ WORKER_CAPACITY: "12" });
}, 60_000);
afterAll(() => cp?.stop());

/** Adapter i learns to continue its prompt with its own tokens, so adapters differ. */
function lesson(i: number): Datum {
  return buildSftDatum({ sequence: [5, 6, 7, 40 + i, 80 + i, 120 + i], weights: [0, 0, 0, 1, 1, 1] });
}

/** Trains adapter i for two steps and publishes it; returns its sampling client. */
async function trainedAdapter(service: ServiceClient, i: number) {
  const tc = await service.createLoraTrainingClient({
    baseModel: BASE,
    rank: 4,
    seed: i,
    trainUnembed: true,
  });
  for (let step = 0; step < 2; step++) {
    await tc.forwardBackward([lesson(i)], "cross_entropy");
    await (await tc.optimStep({ learningRate: 0.05 })).result();
  }
  return tc.createSamplingClient();
}

describe("load", () => {
  it("answers 50 concurrent sample requests over 20 adapters from 4 teams with the right adapter", async () => {
    const remote = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        trainedAdapter(new RemoteServiceClient({ baseUrl: cp.url, apiKey: (teams[i % 4] as Team).key }), i),
      ),
    );
    const dir = await mkdtemp(path.join(tmpdir(), "opentinker-load-"));
    try {
      const base = await loadBaseModel(path.join(cp.dir, "model"), BASE);
      const local = InProcessServiceClient.local([base], dir, "local");
      const expected: SamplingClient[] = [];
      for (let i = 0; i < 20; i++) expected.push(await trainedAdapter(local, i));
      const prompt = modelInputFromTokens([5, 6, 7]);
      // The adapters really differ: the same request gives other logprobs on another adapter.
      const [first, second] = await Promise.all(
        [0, 1].map(async (i) =>
          (await (expected[i] as SamplingClient).sample(prompt, 1, { maxTokens: 1, seed: 3 })).result(),
        ),
      );
      expect(first?.sequences[0]?.logprobs[0]).not.toBeCloseTo(
        second?.sequences[0]?.logprobs[0] as number,
        3,
      );
      const requests = Array.from({ length: 50 }, (_, r) => ({ adapter: r % 20, seed: 1000 + r }));
      const started = performance.now();
      const answers = await Promise.all(
        requests.map(async ({ adapter, seed }) =>
          (
            await (remote[adapter] as (typeof remote)[number]).sample(prompt, 2, { maxTokens: 4, seed })
          ).result(),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      for (const [r, { adapter, seed }] of requests.entries()) {
        const want = await (
          await (expected[adapter] as SamplingClient).sample(prompt, 2, { maxTokens: 4, seed })
        ).result();
        const got = answers[r];
        expect(
          got?.sequences.map((s) => s.tokens),
          `request ${r} (adapter ${adapter})`,
        ).toEqual(want.sequences.map((s) => s.tokens));
        for (const [k, s] of want.sequences.entries())
          for (const [t, lp] of s.logprobs.entries())
            expect(got?.sequences[k]?.logprobs[t]).toBeCloseTo(lp, 4);
      }
      // Both workers served some of them.
      const servedBy = await cp.t.db.adapter.groupBy({ by: ["workerId"], _count: true });
      expect(servedBy.filter((g) => g.workerId).length).toBe(2);
      console.log(`load: 50 sample requests over 20 adapters in ${seconds.toFixed(2)} s`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
