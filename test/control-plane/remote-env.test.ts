// A server-side RL job over a remote environment: an HTTP server on an
// allow-listed host answering reset/step; the job trains through it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
let envServer: Server;
let envUrl = "";
const resets: { split: string; seed: number; index: number }[] = [];

/** The toy task over HTTP: answer with one token whose id is below 141. */
function startEnvServer(): Promise<void> {
  let next = 0;
  envServer = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      const input = JSON.parse(body);
      res.setHeader("content-type", "application/json");
      if (req.url === "/env/reset") {
        resets.push(input);
        res.end(
          JSON.stringify({
            sessionId: `s${next++}`,
            observation: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30, 40 + (input.index % 3)] }] },
            stop: { stop: [], maxTokens: 1 },
          }),
        );
      } else if (req.url === "/env/step") {
        res.end(JSON.stringify({ reward: input.action[0] < 141 ? 1 : 0, done: true }));
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
  });
  return new Promise((resolve) =>
    envServer.listen(0, "127.0.0.1", () => {
      envUrl = `http://127.0.0.1:${(envServer.address() as AddressInfo).port}/env`;
      resolve();
    }),
  );
}

beforeAll(async () => {
  await startEnvServer();
  const allowed = new URL(envUrl).host;
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = allowed;
  cp = await ControlPlane.start();
  team = await cp.team("remote-env");
  await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: allowed });
}, 60_000);
afterAll(async () => {
  delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
  envServer?.close();
  await cp?.stop();
});

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
