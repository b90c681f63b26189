// Making room: when every worker that could hold an adapter is full, the least
// recently used idle adapter is saved (its RELEASED_CHECKPOINT) and let go, and
// the call that needed the room is refused as retryable meanwhile. The released
// adapter's next call restores exactly the state it had, unsaved steps included.
import { RELEASED_CHECKPOINT } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
let other: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("room");
  other = await cp.team("room-other");
  await cp.startWorker({ WORKER_CAPACITY: "1" });
}, 60_000);
afterAll(() => cp?.stop());

const data = [
  {
    modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
    lossFnInputs: {
      targetTokens: { dtype: "int64", data: [20, 30, 40] },
      weights: { dtype: "float32", data: [1, 1, 1] },
    },
  },
];

async function adapter(key: string, name: string): Promise<string> {
  return (await cp.api<{ id: string }>(key, "POST", "/v1/adapters", { name, baseModel: BASE, rank: 2 })).body
    .id;
}

/** A forward pass, retried while the service answers 503 (as the SDKs do); the loss and how many 503s. */
async function loss(key: string, adapterId: string): Promise<{ loss: number; busy: number }> {
  for (let busy = 0; busy < 100; busy++) {
    const accepted = await cp.api<{ requestId: string; message: string }>(
      key,
      "POST",
      "/v1/training/forward",
      {
        adapterId,
        data,
        lossFn: "cross_entropy",
        waitMs: 30_000,
      },
    );
    if (accepted.status === 503) {
      expect(accepted.body.message).toMatch(/idle adapter is being saved and released to make room: retry/);
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    expect(accepted.status).toBe(200);
    const out = await cp.call<{ metrics: Record<string, number> }>(key, "/v1/training/forward", {
      adapterId,
      data,
      lossFn: "cross_entropy",
    });
    return { loss: out.metrics["loss:sum"] as number, busy };
  }
  throw new Error(`adapter ${adapterId} never got room`);
}

describe("making room on full workers", () => {
  it("saves and releases the idlest adapter for another team's call, then restores it exactly", async () => {
    const a = await adapter(team.key, "a");
    await cp.call(team.key, "/v1/training/forward-backward", { adapterId: a, data, lossFn: "cross_entropy" });
    await cp.call(team.key, "/v1/training/optim-step", { adapterId: a, adam: { learningRate: 0.05 } });
    const trained = (await loss(team.key, a)).loss; // an unsaved step: only the release can keep it
    const b = await adapter(other.key, "b");
    const first = await loss(other.key, b);
    expect(first.busy).toBeGreaterThan(0);
    const released = await cp.t.db.checkpoint.findFirst({
      where: { adapterId: a, name: RELEASED_CHECKPOINT },
    });
    expect(released).not.toBeNull();
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: a } })).workerId).toBeNull();
    const back = await loss(team.key, a);
    expect(back.busy).toBeGreaterThan(0); // b made room in turn
    expect(back.loss).toBe(trained);
    const names = (await cp.t.db.checkpoint.findMany({ where: { adapterId: a } })).map((c) => c.name);
    expect(names).toEqual([RELEASED_CHECKPOINT]); // one per adapter, replaced each time
    expect(await cp.t.db.checkpoint.count({ where: { adapterId: b, name: RELEASED_CHECKPOINT } })).toBe(1);
  }, 120_000);
});
