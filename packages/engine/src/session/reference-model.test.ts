// lossFnConfig.referenceModel: the KL of referenceKl measured against a
// published snapshot instead of the frozen base, resolved within the policy's
// team. The fear: a reference that is not exactly the snapshot (wrong tensors,
// wrong LoRA scale), one that follows the live weights as they train, or a
// handle of another team's that loads.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildRlDatum, buildSftDatum, type Datum, type LossFnConfig } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BaseModel, loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";
import { InMemorySnapshotRegistry } from "../snapshots/registry.ts";
import { hostValues, setValues } from "../testing/tensors.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";
import { Trainer } from "../trainer/trainer.ts";
import { PolicySession } from "./policy-session.ts";
import { InMemoryPolicyRegistry } from "./registry.ts";

let dir: string;
let base: BaseModel;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-refmodel-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 16,
    numLayers: 2,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 24,
    seed: 5,
    scale: 0.3,
  });
  base = await loadBaseModel(path.join(dir, "model"), "tiny");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const SFT = [buildSftDatum({ sequence: [3, 40, 7, 99, 12, 5, 8, 8], weights: [0, 1, 1, 1, 1, 1, 1, 1] })];
/** Zero advantages: the loss adds nothing, so the metric is the KL's alone. */
const ROLLOUT: Datum[] = [
  buildRlDatum({
    sequence: [3, 40, 7, 99, 12],
    mask: [0, 0, 1, 1, 1],
    logprobs: [0, 0, -2, -2, -2],
    advantages: 0,
  }),
];

/** One service's store and snapshot registry, which every session of a test shares. */
let stores = 0;
function service() {
  return {
    store: new LocalStore(path.join(dir, `store${stores++}`)),
    snapshots: new InMemorySnapshotRegistry(),
  };
}

async function open(policy: Policy, team = "demo", shared = service()) {
  const backing = { store: shared.store, registry: new InMemoryPolicyRegistry(shared.snapshots) };
  return PolicySession.open(policy, { teamId: team, team, adapter: "a" }, backing);
}

async function trainAway(session: PolicySession, steps = 3) {
  for (let i = 0; i < steps; i++) {
    await session.forwardBackward(SFT, "cross_entropy");
    await session.optimStep({ learningRate: 0.05 });
  }
}

/** The mean KL per position a training call reports (its gradients are then dropped). */
async function klTo(session: PolicySession, config: Partial<LossFnConfig>): Promise<number> {
  const { metrics } = await session.forwardBackward(ROLLOUT, "importance_sampling", config);
  for (const t of session.policy.tensors) session.policy.params.backend.fill(t.grad, 0);
  session.policy.hasGrad = false;
  return metrics["reference_kl:mean"] as number;
}

const policies: [string, () => Policy][] = [
  [
    "LoRA",
    () =>
      createLoraPolicy(base, {
        rank: 2,
        alpha: 8,
        trainAttn: true,
        trainMlp: true,
        trainUnembed: true,
        seed: 1,
      }),
  ],
  ["full-parameter", () => createFullPolicy(base)],
];

describe.each(policies)("a %s policy's KL to one of its own snapshots", (_kind, make) => {
  it("is 0 against the snapshot of the weights as they are, where the base's is not", async () => {
    const session = await open(make());
    await trainAway(session);
    const { handle } = await session.publish();
    expect(await klTo(session, { referenceKl: 0.5, referenceModel: handle })).toBeCloseTo(0, 6);
    expect(await klTo(session, { referenceKl: 0.5 })).toBeGreaterThan(1e-3);
  });

  it("stays the snapshot's while the policy trains on, as a fresh session loading it measures", async () => {
    const shared = service();
    const session = await open(make(), "demo", shared);
    await trainAway(session);
    const { handle } = await session.publish();
    await trainAway(session, 2);
    const moved = await klTo(session, { referenceKl: 0.5, referenceModel: handle });
    expect(moved).toBeGreaterThan(1e-4);
    // The same weights in another session (no cache) measure the same KL to the same snapshot.
    const other = await open(make(), "demo", shared);
    for (const [i, t] of other.policy.tensors.entries()) {
      const source = session.policy.tensors[i];
      if (source) setValues(other.policy, t.value, hostValues(session.policy, source.value));
    }
    expect(await klTo(other, { referenceKl: 0.5, referenceModel: handle })).toBe(moved);
  });
});

describe("a KL reference named by handle", () => {
  it("answers another team's snapshot exactly like a missing one, and accumulates nothing", async () => {
    const shared = service();
    const theirs = await open(createFullPolicy(base), "other", shared);
    const { handle } = await theirs.publish();
    const ours = await open(createFullPolicy(base), "demo", shared);
    const missing = "opentinker://demo/a/sampler/7";
    for (const name of [handle, missing]) {
      await expect(klTo(ours, { referenceKl: 0.5, referenceModel: name })).rejects.toThrow(
        `forwardBackward: lossFnConfig.referenceModel ${name}: no such snapshot`,
      );
      expect(ours.policy.hasGrad).toBe(false);
    }
  });

  it("is refused without a KL to weigh it, and by a trainer that cannot load it", async () => {
    const session = await open(createFullPolicy(base));
    const { handle } = await session.publish();
    await expect(
      session.forwardBackward(ROLLOUT, "importance_sampling", { referenceModel: handle }),
    ).rejects.toThrow(/lossFnConfig: referenceModel: names the reference of referenceKl, which is 0/);
    const trainer = new Trainer(createFullPolicy(base));
    expect(() =>
      trainer.forwardBackward(ROLLOUT, "importance_sampling", { referenceKl: 0.5, referenceModel: handle }),
    ).toThrow(/referenceModel .* was not loaded/);
  });
});
