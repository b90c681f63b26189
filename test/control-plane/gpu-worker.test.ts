// A GPU worker, end to end, without a GPU (issue 47): a real worker process on
// the CUDA backend over the emulated device (WORKER_DEVICE=cuda-emulated: the
// kernels a GPU runs, executed on the CPU) runs a short RL job from Postgres to
// SUCCEEDED, and its reward rises. The environment pays for an even first
// token, which a LoRA policy with an unembedding adapter learns in a few steps
// from about one half (the CPU worker draws the same rewards, step by step).
import { existsSync } from "node:fs";
import { CUDA_EMU_ADDON_FILE } from "@opentinker/kernels/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";
import { countingReset, type RemoteEnv, startRemoteEnv } from "./remote-env-server.ts";

const built = existsSync(CUDA_EMU_ADDON_FILE);
const STEPS = 10;

let cp: ControlPlane;
let team: Team;
let env: RemoteEnv;

beforeAll(async () => {
  if (!built) return;
  env = await startRemoteEnv({
    reset: countingReset(),
    step: (input) => ({ reward: (input.action[0] ?? 1) % 2 === 0 ? 1 : 0, done: true }),
  });
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = env.host;
  cp = await ControlPlane.start();
  team = await cp.team("gpu");
  await cp.startWorker({ WORKER_DEVICE: "cuda-emulated", OPENTINKER_REMOTE_ENV_HOSTS: env.host });
}, 120_000);
afterAll(async () => {
  delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
  env?.close();
  await cp?.stop();
});

describe.skipIf(!built)("a worker on the CUDA backend (emulated device)", () => {
  it("registers its device and runs an RL job to SUCCEEDED with a rising reward", async () => {
    const worker = await cp.t.db.worker.findFirstOrThrow();
    expect(worker.device).toBe("cuda:0");
    expect(worker.deviceDescription).toMatch(/emulated CUDA device/);

    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "even",
      baseModel: BASE,
      rank: 4,
      // LoRA on the unembedding: a per-token bias within reach of a few steps.
      trainUnembed: true,
    });
    const environment = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "even-env",
      kind: "REMOTE",
      url: env.url(),
    });
    const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId: adapter.body.id,
      environmentId: environment.body.id,
      config: {
        steps: STEPS,
        groupsPerStep: 2,
        groupSize: 8,
        lossFn: "importance_sampling",
        adam: { learningRate: 0.02 },
        seed: 3,
      },
    });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    const jobId = job.body.id;
    const done = await until(
      async () => {
        const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
        return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status) ? row : undefined;
      },
      `job ${jobId} to finish`,
      240_000,
    );
    expect(done.error).toBeNull();
    expect(done.status).toBe("SUCCEEDED");

    const rewards = await cp.t.db.metric.findMany({
      where: { jobId, name: "reward/mean" },
      orderBy: { step: "asc" },
    });
    expect(rewards.map((r) => r.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));
    const mean = (rows: typeof rewards) => rows.reduce((s, r) => s + r.value, 0) / rows.length;
    const [first, last] = [mean(rewards.slice(0, 2)), mean(rewards.slice(-2))];
    expect(last, `reward/mean by step: ${rewards.map((r) => r.value.toFixed(2)).join(" ")}`).toBeGreaterThan(
      first + 0.2,
    );
  }, 300_000);
});
