// A server-side RL job over a remote environment: an HTTP server on an
// allow-listed host answering reset/step; the job trains through it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, type ControlPlane, type Team } from "./harness.ts";
import { type RemoteEnvStack, startRemoteEnvStack } from "./remote-env-server.ts";

let stack: RemoteEnvStack;
let cp: ControlPlane;
let team: Team;
let envUrl = "";
const resets: { split: string; seed: number; index: number }[] = [];

beforeAll(async () => {
  let next = 0;
  // The toy task over HTTP: answer with one token whose id is below 141.
  stack = await startRemoteEnvStack({
    reset: (input) => {
      resets.push(input);
      return {
        sessionId: `s${next++}`,
        observation: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30, 40 + (input.index % 3)] }] },
        stop: { stop: [], maxTokens: 1 },
      };
    },
    step: (input) => ({ reward: (input.action[0] as number) < 141 ? 1 : 0, done: true }),
  });
  ({ cp, url: envUrl } = stack);
  team = await cp.team("remote-env");
}, 60_000);
afterAll(() => stack?.stop());

describe("remote environments", () => {
  it("train a server-side RL job through reset/step on an allow-listed host", async () => {
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "r",
      baseModel: BASE,
      rank: 4,
    });
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "http-env",
      kind: "REMOTE",
      url: envUrl,
    });
    expect(env.status, JSON.stringify(env.body)).toBe(200);
    const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId: adapter.body.id,
      environmentId: env.body.id,
      config: { steps: 3, groupsPerStep: 2, groupSize: 4, seed: 7 },
    });
    let row = await cp.t.db.job.findUniqueOrThrow({ where: { id: job.body.id } });
    while (!row.finishedAt) {
      await new Promise((r) => setTimeout(r, 100));
      row = await cp.t.db.job.findUniqueOrThrow({ where: { id: job.body.id } });
    }
    expect(row.error).toBeNull();
    expect(row.status).toBe("SUCCEEDED");
    expect(await cp.t.db.trajectory.count({ where: { jobId: job.body.id } })).toBe(3 * 2 * 4);
    // Each group's episodes are one task: 4 resets per (split, seed, index).
    const perTask = new Map<string, number>();
    for (const r of resets)
      perTask.set(
        `${r.split}/${r.seed}/${r.index}`,
        (perTask.get(`${r.split}/${r.seed}/${r.index}`) ?? 0) + 1,
      );
    expect([...perTask.values()].every((n) => n === 4)).toBe(true);
    expect(perTask.size).toBe(6);
  }, 120_000);
});
