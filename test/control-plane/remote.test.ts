// The remote SDK clients against a real server and worker give the same run as
// the in-process clients: same seed, same metrics at every step.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { RemoteServiceClient } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toyRl } from "../../examples/toy-rl.ts";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("remote");
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

describe("remote clients", () => {
  it("run trainRl to the same metrics as the in-process clients", async () => {
    // Sampled logprobs differ in the last bits with how the sampler batched the
    // requests (in-process: all at once; remote: as they arrive). In this task the
    // gradient of the unembedding's rows for tokens never sampled cancels to that
    // noise, and Adam's first step moves a weight by ±lr whatever its gradient's
    // size; so the comparison trains the attention and MLP adapters only, where
    // the gradient is signal, and compares the runs, not the noise.
    const run = { baseModel: BASE, steps: 4, trainUnembed: false };
    const steps = run.steps;
    const remote = await toyRl(new RemoteServiceClient({ baseUrl: cp.url, apiKey: team.key }), run);
    const dir = await mkdtemp(path.join(tmpdir(), "opentinker-inproc-"));
    try {
      const base = await loadBaseModel(path.join(cp.dir, "model"), BASE);
      const local = await toyRl(InProcessServiceClient.local([base], dir, "local"), run);
      expect(remote).toHaveLength(steps);
      for (const [i, record] of local.entries()) {
        const other = remote[i] as Record<string, number>;
        expect(Object.keys(other).sort()).toEqual(Object.keys(record).sort());
        // The same tokens were sampled, so rewards agree exactly; float metrics to 1e-4.
        expect(other["reward/mean"], `step ${i}`).toBe(record["reward/mean"]);
        for (const [k, v] of Object.entries(record))
          expect(
            Math.abs((other[k] as number) - v),
            `step ${i} ${k}: ${other[k]} vs ${v}`,
          ).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(v)));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
