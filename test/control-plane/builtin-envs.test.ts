// Every built-in environment can be created over REST and a job on it runs on a
// real worker: nim (self-play, and against a fixed opponent) on a text model,
// shapes on the vision-language model `npm start` registers.
import type { AppRouter } from "@opentinker/api";
import { registerBaseModel } from "@opentinker/db";
import { DEFAULT_VL_MODEL } from "@opentinker/models";
import { createOpenTinkerClient } from "@opentinker/sdk";
import { TRPCClientError } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseModels } from "../../scripts/base-models.ts";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";

let cp: ControlPlane;
let team: Team;

beforeAll(async () => {
  cp = await ControlPlane.start();
  // The base models exactly as `npm start` registers them, the built-in VL model among them.
  for (const model of await baseModels(cp.dir, undefined)) await registerBaseModel(cp.t.db, model);
  team = await cp.team("builtins");
  await cp.startWorker();
}, 120_000);
afterAll(() => cp?.stop());

async function runJob(
  name: string,
  baseModel: string,
  environment: Record<string, unknown>,
  jobConfig: Record<string, unknown> = {},
) {
  const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name,
    baseModel,
    rank: 4,
  });
  expect(adapter.status, JSON.stringify(adapter.body)).toBe(200);
  const env = await cp.api<{ id: string; builtin: string; config: unknown }>(
    team.key,
    "POST",
    "/v1/environments",
    { name: `${name}-env`, kind: "BUILTIN", ...environment },
  );
  expect(env.status, JSON.stringify(env.body)).toBe(200);
  expect(env.body).toMatchObject(environment);
  const job = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
    kind: "RL",
    adapterId: adapter.body.id,
    environmentId: env.body.id,
    config: {
      steps: 2,
      groupsPerStep: 2,
      groupSize: 2,
      seed: 3,
      validation: { every: 1, groups: 2 },
      ...jobConfig,
    },
  });
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  const done = await until(async () => {
    const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: job.body.id } });
    return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status) ? row : undefined;
  }, `job ${job.body.id} to finish`);
  expect(done.error).toBeNull();
  expect(done.status).toBe("SUCCEEDED");
  expect(done.step).toBe(2);
  return job.body.id;
}

const metricNames = async (jobId: string) =>
  new Set((await cp.t.db.metric.findMany({ where: { jobId }, select: { name: true } })).map((m) => m.name));

describe("built-in environments beyond arithmetic and guess-number", () => {
  it("reports the built-in vision-language model as one, as npm start registers it", async () => {
    const models = await cp.api<{ name: string; visionLanguage: boolean; imageTokens: number | null }[]>(
      team.key,
      "GET",
      "/v1/models",
    );
    expect(models.body.find((m) => m.name === DEFAULT_VL_MODEL)).toMatchObject({
      visionLanguage: true,
      imageTokens: 16,
    });
  });

  it("creates a nim self-play environment and runs an RL job on it to the end (with a KL to the base), storing both seats' games", async () => {
    const jobId = await runJob(
      "nim-selfplay",
      BASE,
      { builtin: "nim", config: { opponent: "self-play", lenient: true } },
      { referenceKl: 0.3 },
    );
    // Self-play: both seats of each game are trained on (2 groups × 2 games × 2 players).
    expect(await cp.t.db.trajectory.count({ where: { jobId, step: 0 } })).toBe(8);
    const names = await metricNames(jobId);
    expect(names).toContain("reward/mean");
    // The job's referenceKl reaches the trainer: its steps record the KL to the base.
    expect(names).toContain("reference_kl/mean");
  }, 120_000);

  it("creates a nim environment against the optimal player: only the learner's games are stored", async () => {
    const jobId = await runJob("nim-optimal", BASE, {
      builtin: "nim",
      config: { opponent: "optimal", illegalPenalty: -2 },
    });
    expect(await cp.t.db.trajectory.count({ where: { jobId, step: 0 } })).toBe(4);
  }, 120_000);

  it("creates a shapes environment and runs an RL job on the vision-language model to the end", async () => {
    const jobId = await runJob("shapes", DEFAULT_VL_MODEL, { builtin: "shapes", config: { maxTokens: 4 } });
    expect(await cp.t.db.trajectory.count({ where: { jobId, step: 1 } })).toBe(4);
    expect(await metricNames(jobId)).toContain("reward/mean");
  }, 120_000);

  it("refuses at creation, over REST and tRPC, a shapes job on a text-only model, naming the model", async () => {
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "shapes-on-text",
      baseModel: BASE,
      rank: 4,
    });
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "shapes-on-text-env",
      kind: "BUILTIN",
      builtin: "shapes",
    });
    const input = {
      kind: "RL" as const,
      adapterId: adapter.body.id,
      environmentId: env.body.id,
      config: { steps: 1, groupsPerStep: 1, groupSize: 2 },
    };
    const jobsBefore = await cp.t.db.job.count();
    const rest = await cp.api<{ error: { message: string } }>(team.key, "POST", "/v1/jobs", input);
    expect(rest.status).toBe(400);
    const message = JSON.stringify(rest.body);
    expect(message).toContain(BASE);
    expect(message).toMatch(/shapes job needs an adapter over a vision-language base model/);
    expect(message).toContain(DEFAULT_VL_MODEL);
    const client = createOpenTinkerClient({ url: cp.url, apiKey: team.key });
    const refused = await client.jobs.create.mutate(input).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TRPCClientError);
    const trpcError = refused as TRPCClientError<AppRouter>;
    expect(trpcError.message).toContain(`${BASE} is a text-only base model`);
    expect(trpcError.data?.httpStatus).toBe(400);
    expect(await cp.t.db.job.count()).toBe(jobsBefore);
  }, 120_000);
});
