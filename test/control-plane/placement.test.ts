// Placement: an adapter trained through the API lives on one worker; when that
// worker dies its unfinished calls fail saying so, and the next call re-places
// the adapter on another worker from its last checkpoint.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, STALE_AFTER_MS, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("place");
  await cp.startWorker();
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

const datum = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [20, 30, 40] },
    weights: { dtype: "float32", data: [1, 1, 1] },
  },
};

describe("placement", () => {
  it("re-places an adapter from its last checkpoint when its worker dies", async () => {
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "p",
      baseModel: BASE,
      rank: 2,
    });
    const adapterId = adapter.body.id;
    const step = async () => {
      await cp.call(team.key, "/v1/training/forward-backward", {
        adapterId,
        data: [datum],
        lossFn: "cross_entropy",
      });
      return cp.call<{ metrics: Record<string, number> }>(team.key, "/v1/training/optim-step", { adapterId });
    };
    await step();
    await cp.call(team.key, "/v1/training/save-state", { adapterId, name: "after-1" });
    expect((await step()).metrics["step:value"]).toBe(2); // not checkpointed
    const holder = (await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).workerId;
    const victim = cp.workers.find((w) => w.id === holder);
    victim?.child.kill("SIGKILL");
    await victim?.exited;
    // A call accepted before the loss is noticed goes to the dead worker's queue, and fails saying why.
    const orphan = await cp.api<{ requestId: string }>(team.key, "POST", "/v1/training/forward", {
      adapterId,
      data: [datum],
      lossFn: "cross_entropy",
    });
    const outcome = await cp.api<{ status: string; error: string }>(
      team.key,
      "POST",
      `/v1/futures/${orphan.body.requestId}/wait`,
      {
        timeoutMs: STALE_AFTER_MS * 10,
      },
    );
    expect(outcome.body.status).toBe("FAILED");
    expect(outcome.body.error).toMatch(/was lost; the adapter resumes from its last checkpoint/);
    // The next call lands on the other worker, from the checkpoint at step 1.
    expect((await step()).metrics["step:value"]).toBe(2);
    const now = (await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapterId } })).workerId;
    expect(now).not.toBe(holder);
    expect(now).not.toBeNull();
  }, 120_000);
});
