// Divergence guards over the real server and worker: a training call that meets
// a non-finite loss is refused with a message naming it and changes no weight,
// and a server-side job whose environment's rewards blow up (under the largest
// learning rate the schemas allow) ends FAILED as "diverged" at that step, with
// its last good snapshot still loadable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, type ControlPlane, type Team, until } from "./harness.ts";
import { type RemoteEnvStack, startRemoteEnvStack } from "./remote-env-server.ts";

/** The step whose rewards blow up (each step answers `GROUP` episodes). */
const EXPLODES_AT = 2;
const GROUP = 4;

let stack: RemoteEnvStack;
let cp: ControlPlane;
let team: Team;
let envUrl: string;

beforeAll(async () => {
  let next = 0;
  let answered = 0;
  // Pays 0 or 1 by episode (so every group has signal), then, from step
  // EXPLODES_AT on, 0 or 1e300: finite on the wire, but an advantage past
  // float32's range, so the step's loss is non-finite.
  stack = await startRemoteEnvStack({
    reset: () => ({
      sessionId: `s${next++}`,
      observation: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
      stop: { stop: [], maxTokens: 2 },
    }),
    step: () => {
      const scale = answered >= EXPLODES_AT * GROUP ? 1e300 : 1;
      return { reward: (answered++ % 2) * scale, done: true };
    },
  });
  ({ cp, url: envUrl } = stack);
  team = await cp.team("divergence");
}, 60_000);
afterAll(() => stack?.stop());

async function createAdapter(name: string): Promise<string> {
  const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name,
    baseModel: BASE,
    rank: 4,
  });
  expect(adapter.status, JSON.stringify(adapter.body)).toBe(200);
  return adapter.body.id;
}

async function snapshotFiles(adapterId: string): Promise<Record<string, string>> {
  const saved = await cp.call<{ handle: string }>(team.key, "/v1/training/save-weights-for-sampler", {
    adapterId,
  });
  const download = await cp.api<{ files: Record<string, string> }>(
    team.key,
    "GET",
    `/v1/snapshots/download?handle=${encodeURIComponent(saved.handle)}`,
  );
  expect(download.status).toBe(200);
  return download.body.files;
}

describe("divergence guards", () => {
  it("refuse a huge alpha or learning rate, naming the field and the bound", async () => {
    const adapter = await cp.api<{ message: string }>(team.key, "POST", "/v1/adapters", {
      name: "huge-alpha",
      baseModel: BASE,
      alpha: 1e30,
    });
    expect(adapter.status).toBe(400);
    expect(adapter.body.message).toBe("alpha: alpha must be at most 1024");
    const adapterId = await createAdapter("huge-lr");
    const optim = await cp.api<{ message: string }>(team.key, "POST", "/v1/training/optim-step", {
      adapterId,
      adam: { learningRate: 1e9 },
    });
    expect(optim.status).toBe(400);
    expect(optim.body.message).toBe("adam.learningRate: learningRate must be at most 1");
  });

  it("a forward_backward whose loss is non-finite fails, naming it, and leaves the weights as they were", async () => {
    const adapterId = await createAdapter("non-finite-call");
    const before = await snapshotFiles(adapterId);
    // exp(logp − old logprob) overflows: the importance ratio, and so the loss, is infinite.
    const datum = {
      modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30] }] },
      lossFnInputs: {
        targetTokens: { dtype: "int64", data: [20, 30, 40] },
        logprobs: { dtype: "float32", data: [-1000, -1000, -1000] },
        advantages: { dtype: "float32", data: [1, 1, 1] },
        mask: { dtype: "float32", data: [1, 1, 1] },
      },
    };
    const fb = cp.call(team.key, "/v1/training/forward-backward", {
      adapterId,
      data: [datum],
      lossFn: "importance_sampling",
    });
    await expect(fb).rejects.toThrow(
      /FAILED: forwardBackward: non-finite loss at data\[0\] \((-?Infinity|NaN)\)/,
    );
    const optim = cp.call(team.key, "/v1/training/optim-step", { adapterId, adam: { learningRate: 1 } });
    await expect(optim).rejects.toThrow(/no gradients were accumulated/);
    expect(await snapshotFiles(adapterId)).toEqual(before);
  }, 60_000);

  it("a job whose loss turns non-finite ends FAILED as diverged at that step, its last good snapshot loadable", async () => {
    const adapterId = await createAdapter("diverging-job");
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "exploding-rewards",
      kind: "REMOTE",
      url: envUrl,
    });
    expect(env.status, JSON.stringify(env.body)).toBe(200);
    const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId,
      environmentId: env.body.id,
      config: { steps: 6, groupsPerStep: 1, groupSize: GROUP, seed: 3, adam: { learningRate: 1 } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const job = await until(async () => {
      const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: created.body.id } });
      return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status) ? row : undefined;
    }, "the diverging job to end");
    expect(job.status).toBe("FAILED");
    expect(job.error).toMatch(
      new RegExp(`^diverged at step ${EXPLODES_AT}: forwardBackward: non-finite loss at data\\[\\d+\\]`),
    );
    expect(job.step).toBe(EXPLODES_AT);
    // The job's own settings made it diverge: a user error, as the API shows it.
    expect(job.errorClass).toBe("USER");
    const shown = await cp.api<{ errorClass: string | null }>(team.key, "GET", `/v1/jobs/${job.id}`);
    expect(shown.body.errorClass).toBe("USER");
    // keep-final: the snapshot and checkpoint of the last good step remain.
    const versions = await cp.api<{ handle: string; trainerStep: number }[]>(
      team.key,
      "GET",
      `/v1/adapters/${adapterId}/versions`,
    );
    expect(versions.body.map((v) => v.trainerStep)).toEqual([EXPLODES_AT]);
    const sample = await cp.call<{ sequences: unknown[] }>(team.key, "/v1/sampling/sample", {
      policy: { handle: versions.body[0]?.handle },
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      params: { maxTokens: 2, seed: 1 },
    });
    expect(sample.sequences).toHaveLength(1);
    const checkpoints = await cp.t.db.checkpoint.findMany({ where: { jobId: job.id } });
    expect(checkpoints.map((c) => c.step)).toEqual([EXPLODES_AT]);
  }, 120_000);
});
