// A server-side RL job with validation on a real worker: validated before the
// first step (as step 0), every N steps and after the last; the best validated
// version is marked on the adapter (API and versions) and keep-final keeps it.
import type { BestVersion } from "@opentinker/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team, until } from "./harness.ts";

let cp: ControlPlane;
let team: Team;

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("validation");
  await cp.startWorker();
}, 60_000);
afterAll(() => cp?.stop());

const STEPS = 5;
const METRIC = "val/reward/mean";

describe("validation of server-side RL jobs", () => {
  it("validates at step 0, every N steps and at the final step, and keeps the best validated version", async () => {
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "validated",
      baseModel: BASE,
      rank: 4,
    });
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "validated-env",
      kind: "BUILTIN",
      builtin: "arithmetic",
      config: { maxOperand: 5 },
    });
    const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId: adapter.body.id,
      environmentId: env.body.id,
      config: {
        steps: STEPS,
        groupsPerStep: 2,
        groupSize: 4,
        dropConstantGroups: false,
        seed: 2,
        validation: { every: 2, groups: 4, groupSize: 2 },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const jobId = created.body.id;
    const job = await until(async () => {
      const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
      return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status) ? row : undefined;
    }, `job ${jobId} to finish`);
    expect(job.error).toBeNull();
    expect(job.status).toBe("SUCCEEDED");

    const metrics = await cp.api<{ step: number; name: string; value: number }[]>(
      team.key,
      "GET",
      `/v1/jobs/${jobId}/metrics`,
    );
    const validations = metrics.body.filter((m) => m.name === METRIC);
    // Before any training, after steps 2 and 4 (numbered 1 and 3), and after the last (4).
    expect(validations.map((m) => m.step)).toEqual([0, 1, 3, STEPS - 1]);
    // 4 groups × 2 samples per validation.
    const failed = metrics.body.filter((m) => m.name === "val/trajectories/failed");
    expect(failed).toHaveLength(4);

    // The best: the highest validation (the earliest on a tie), measured on the version of that point.
    const versionAt = (step: number) =>
      step === 0 ? 1 : metrics.body.find((m) => m.step === step && m.name === "policy/version")?.value;
    const top = Math.max(...validations.map((m) => m.value));
    const chosen = validations.find((m) => m.value === top);
    const got = await cp.api<{ best: BestVersion | null }>(
      team.key,
      "GET",
      `/v1/adapters/${adapter.body.id}`,
    );
    expect(got.body.best).toMatchObject({
      jobId,
      metric: METRIC,
      value: top,
      step: chosen?.step,
      version: versionAt(chosen?.step ?? -1),
    });

    // keep-final: the final version and the best stay; the best is named so in the versions.
    const versions = await cp.api<{ version: number; tags: string[] }[]>(
      team.key,
      "GET",
      `/v1/adapters/${adapter.body.id}/versions`,
    );
    const final = Math.max(...versions.body.map((v) => v.version));
    expect(versions.body.map((v) => v.version).sort()).toEqual(
      [...new Set([got.body.best?.version, final])].sort(),
    );
    expect(versions.body.filter((v) => v.tags.includes("best")).map((v) => v.version)).toEqual([
      got.body.best?.version,
    ]);
  }, 180_000);
});
