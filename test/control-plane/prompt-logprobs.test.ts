// Prompt logprobs over HTTP: the TS SDK's remote sampling client asks the real
// server and worker for them, and gets the numbers computeLogprobs gives for the
// same policy, with the top k per position, once for all samples.
import { buildSftDatum, type ModelInput } from "@opentinker/protocol";
import { RemoteServiceClient } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

const PROMPT = [5, 17, 42, 8, 99, 23, 61, 7, 13, 88, 3, 54, 31, 76, 20, 11, 64, 2, 90, 45];
const INPUT: ModelInput = { chunks: [{ type: "encoded_text", tokens: PROMPT }] };

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("scores");
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

describe("prompt logprobs through the remote SDK", () => {
  it("agree with computeLogprobs for the base model and a trained adapter, with the top k", async () => {
    const service = new RemoteServiceClient({ baseUrl: cp.url, apiKey: team.key });
    const training = await service.createLoraTrainingClient({ baseModel: BASE, rank: 4, trainUnembed: true });
    const datum = buildSftDatum({ sequence: PROMPT, weights: PROMPT.map(() => 1) });
    for (let step = 0; step < 3; step++) {
      await (await training.forwardBackward([datum], "cross_entropy")).result();
      await (await training.optimStep({ learningRate: 5e-2 })).result();
    }
    const samplers = [
      await service.createSamplingClient({ baseModel: BASE }),
      await training.createSamplingClient(),
    ];
    const scored = [];
    for (const sampler of samplers) {
      const params = { maxTokens: 3, seed: 1 };
      const out = await (
        await sampler.sample(INPUT, 2, params, { promptLogprobs: true, topkPromptLogprobs: 4 })
      ).result();
      const computed = await (await sampler.computeLogprobs(INPUT)).result();
      expect(out.sequences).toHaveLength(2);
      expect(out.promptLogprobs).toHaveLength(PROMPT.length);
      expect(out.promptLogprobs?.[0]).toBeNull();
      for (let p = 1; p < PROMPT.length; p++) {
        const lp = out.promptLogprobs?.[p] as number;
        expect(Math.abs(lp - (computed[p] as number)), `${sampler.policy} position ${p}`).toBeLessThan(1e-4);
        const top = out.topkPromptLogprobs?.[p] ?? [];
        expect(top).toHaveLength(4);
        for (let j = 1; j < top.length; j++)
          expect(top[j]?.[1]).toBeLessThanOrEqual(top[j - 1]?.[1] as number);
        expect(top[0]?.[1]).toBeGreaterThanOrEqual(lp);
        const own = top.find(([id]) => id === PROMPT[p]);
        if (own) expect(own[1]).toBe(lp);
      }
      expect(out.topkPromptLogprobs?.[0]).toBeNull();
      // The samples are those of a call that does not ask, which gets no prompt fields.
      const plain = await (await sampler.sample(INPUT, 2, params)).result();
      expect(plain.sequences).toEqual(out.sequences);
      expect(plain.promptLogprobs).toBeUndefined();
      expect(plain.topkPromptLogprobs).toBeUndefined();
      scored.push(out.promptLogprobs);
    }
    // Each policy scores with its own weights.
    expect(scored[1]).not.toEqual(scored[0]);
  }, 120_000);
});
