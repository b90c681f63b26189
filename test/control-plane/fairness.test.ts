// Quotas and fairness under load from one team: its queued requests stay within
// its quota however many arrive at once, its pipelined training calls run back to
// back, its big jobs are refused or kept from starving other teams' sampling,
// and its cancel takes effect within one rollout step.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("fair");
  // A poll this slow makes any call that waits for it time out: calls must arrive by notice.
  await cp.startWorker({ WORKER_POLL_INTERVAL_MS: "120000" });
}, 60_000);
afterAll(() => cp?.stop());

const datum = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [2, 3, 4] },
    weights: { dtype: "float32", data: [1, 1, 1] },
  },
};

async function adapter(name: string): Promise<string> {
  const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name,
    baseModel: BASE,
    rank: 2,
  });
  expect(created.status).toBe(200);
  return created.body.id;
}

describe("pipelined training calls", () => {
  it("run back to back in seq order, none waiting for the queue's poll", async () => {
    const adapterId = await adapter("pipelined");
    const body = { adapterId, data: [datum], lossFn: "cross_entropy" };
    const accepted: { requestId: string; seq: number }[] = [];
    for (let i = 0; i < 20; i++)
      accepted.push(
        (
          await cp.api<{ requestId: string; seq: number }>(
            team.key,
            "POST",
            "/v1/training/forward-backward",
            body,
          )
        ).body,
      );
    for (const { requestId } of accepted) {
      const done = await cp.api<{ status: string }>(team.key, "POST", `/v1/futures/${requestId}/wait`, {
        timeoutMs: 20_000,
      });
      expect(done.body.status).toBe("SUCCEEDED");
    }
    const rows = await cp.t.db.request.findMany({ where: { adapterId }, orderBy: { startedAt: "asc" } });
    expect(rows.map((r) => r.seq)).toEqual(accepted.map((a) => a.seq));
  }, 60_000);
});
