import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { kernelInfo } from "@opentinker/engine";
import { checksumFiles } from "@opentinker/store";
import { describe, expect, it } from "vitest";
import { type ExperimentOptions, type ExperimentSummary, runExperiment } from "./run.ts";
import { SETTINGS } from "./settings.ts";

const TEST_CHECK_BATCHES = 2;

const readJsonl = async (file: string) =>
  (await readFile(file, "utf8"))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, number>);

async function shortRun(
  name: string,
  check: (summary: ExperimentSummary) => Promise<void>,
  options: Partial<ExperimentOptions> = {},
) {
  const out = await mkdtemp(path.join(tmpdir(), "ot-exp-"));
  try {
    const summary = await runExperiment({
      name,
      seed: 1,
      steps: 2,
      outDir: out,
      quiet: true,
      validateEvery: 1,
      // Two batches keep the short runs short; the default is CHECK_BATCHES.
      checkBatches: TEST_CHECK_BATCHES,
      ...options,
    });
    expect(summary).toMatchObject({ setting: name, seed: 1, steps: 2 });
    const written = JSON.parse(await readFile(summary.files.summary, "utf8"));
    expect(written.setting).toBe(name);
    // Where it ran, as results differ by machine: the CPU and the kernels that did the GEMMs.
    expect(written.machine).toEqual({ cpu: expect.any(String), kernels: kernelInfo() });
    // What the run changed of its setting, so development runs are told apart by their summaries.
    expect(written.overrides).toEqual({ validateEvery: 1, checkBatches: TEST_CHECK_BATCHES, ...options });
    expect(await readFile(summary.files.plot, "utf8")).toMatch(/^<svg[\s\S]*<polyline[\s\S]*<\/svg>$/);
    await checkBest(summary);
    await check(summary);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

/** The kept snapshot is the best validation of the run (start, each validation, end), and its files are that snapshot's; the end's are beside it. */
async function checkBest(summary: ExperimentSummary) {
  const lines = await readJsonl(summary.files.metrics);
  const validated = lines.map((l) => l[`val/${summary.metric}`]).filter((v) => v !== undefined);
  const values = [summary.validationStart, ...validated, summary.validationEnd] as number[];
  expect(summary.best.value).toBe(Math.max(...values));
  for (const dir of summary.files.best) {
    const names = await readdir(dir);
    expect(names.length).toBeGreaterThan(0);
    const files = new Map(
      await Promise.all(names.map(async (n) => [n, await readFile(path.join(dir, n))] as const)),
    );
    if (dir === summary.files.best[0]) expect(checksumFiles(files)).toBe(summary.best.checksum);
  }
  // The end snapshot beside it: the one the end check measured, the run's last.
  expect(summary.files.end).toHaveLength(summary.files.best.length);
  const end = summary.files.end[0] as string;
  const names = await readdir(end);
  const files = new Map(
    await Promise.all(names.map(async (n) => [n, await readFile(path.join(end, n))] as const)),
  );
  expect(checksumFiles(files)).toBe(summary.snapshotChecksum);
}

describe("the experiment runner", () => {
  for (const name of Object.keys(SETTINGS)) {
    it(`a short run of ${name} completes and writes metrics, a summary and a plot`, async () => {
      await shortRun(name, async (summary) => {
        const lines = await readJsonl(summary.files.metrics);
        expect(lines.map((l) => l.step)).toEqual([0, 1]);
        // Every step's trajectories came from a published snapshot, and each update published a newer one.
        const versions = lines.map((l) => l["policy/version"] as number);
        expect(versions[1]).toBeGreaterThan(versions[0] as number);
        // The environments' malformed rate is recorded per step and in validation.
        const malformed = name.startsWith("nim") ? "env/game/illegal_move" : "env/format/malformed";
        expect(
          lines.every((l) => typeof l[malformed] === "number" && typeof l[`val/${malformed}`] === "number"),
        ).toBe(true);
        expect(summary.stateSha256).toMatch(/^[0-9a-f]{64}$/);
        // The start and end checks draw the batches asked for (arithmetic: 128 episodes each).
        expect(summary.checkEpisodes).toBeGreaterThan(0);
        if (name === "arithmetic-lora-rl") expect(summary.checkEpisodes).toBe(TEST_CHECK_BATCHES * 128);
        expect(typeof summary.validationMetrics.end["val/reward/mean"]).toBe("number");
        // Where the checks' malformed actions fell: the inputs' counts add up to no more than the rate says.
        const endInputs = summary.malformedInputs?.end ?? [];
        const counted = endInputs.reduce((n, i) => n + i.malformed, 0);
        expect(counted).toBeLessThanOrEqual(Math.round(summary.malformedEnd * summary.checkEpisodes));
        if (summary.malformedEnd === 0) expect(endInputs).toEqual([]);
        else expect(endInputs[0]?.malformed).toBeGreaterThan(0);
        if (SETTINGS[name]?.sft) expect(typeof summary.validationAfterSft).toBe("number");
        // A KL held to the policy RL starts from: the first update measures it against its own snapshot.
        if (SETTINGS[name]?.klReference === "start")
          expect(Math.abs(lines[0]?.["reference_kl/mean"] ?? 1)).toBeLessThan(1e-6);
        if (name.startsWith("nim")) expect(summary.evaluations?.["vs-optimal"]).toBeDefined();
      });
    }, 180_000);
  }

  it("two adapters trained at once: the first is byte-identical to its solo rerun", async () => {
    await shortRun("two-adapters-lora-rl", async (summary) => {
      expect(summary.members?.map((m) => m.setting)).toEqual(["arithmetic-lora-rl", "guess-number-lora-rl"]);
      // Each member's own steps, cut to the run's --steps.
      expect(summary.members?.map((m) => m.steps)).toEqual([2, 2]);
      expect(summary.isolation).toMatchObject({ identical: true });
      expect(summary.isolation?.aloneStateSha256).toBe(summary.stateSha256);
      // The solo rerun's own time, which the results table leaves out of the pair's.
      expect(summary.isolation?.seconds).toBeGreaterThan(0);
      expect(summary.isolation?.seconds).toBeLessThan(summary.seconds);
      for (const file of summary.files.memberMetrics ?? []) expect(await readJsonl(file)).toHaveLength(2);
      expect(summary.files.memberMetrics).toHaveLength(2);
    });
  }, 300_000);

  it("a KL penalty against the policy RL starts from is applied and recorded each step", async () => {
    await shortRun(
      "arithmetic-full-sft-rl",
      async (summary) => {
        const lines = await readJsonl(summary.files.metrics);
        expect(lines.every((l) => typeof l["kl/mean"] === "number")).toBe(true);
        // The first step samples the reference policy itself: the estimate is 0 within the sampler/trainer agreement.
        expect(Math.abs(lines[0]?.["kl/mean"] ?? 1)).toBeLessThan(1e-4);
      },
      { klCoef: 0.1 },
    );
  }, 180_000);

  it("a run's LoRA rank override reaches the adapter it trains and keeps", async () => {
    await shortRun(
      "arithmetic-lora-rl",
      async (summary) => {
        const dir = summary.files.best[0] as string;
        const config = JSON.parse(await readFile(path.join(dir, "adapter_config.json"), "utf8"));
        expect(config.r).toBe(4);
      },
      { loraRank: 4 },
    );
  }, 180_000);

  it("a run's weight decay and negative-advantage scale reach the optimizer: each trained state differs from the run without it", async () => {
    const states = new Set<string>();
    for (const options of [{}, { weightDecay: 1 }, { negativeScale: 0 }])
      await shortRun(
        "arithmetic-lora-rl",
        async (summary) => {
          expect(summary.stateSha256).toMatch(/^[0-9a-f]{64}$/);
          states.add(summary.stateSha256);
        },
        options,
      );
    expect(states.size).toBe(3);
  }, 180_000);

  it("a run's pretraining mix trains a batch of the base model's corpus into every step", async () => {
    await shortRun(
      "arithmetic-lora-rl",
      async (summary) => {
        const lines = await readJsonl(summary.files.metrics);
        expect(lines).toHaveLength(2);
        for (const line of lines) {
          expect(line["mixed/loss/mean"]).toBeGreaterThan(0);
          expect(line["mixed/weight/sum"]).toBeGreaterThan(0);
        }
      },
      { pretrainMix: 0.1 },
    );
    await expect(
      runExperiment({
        name: "arithmetic-lora-rl",
        seed: 1,
        steps: 1,
        model: "tiny-random",
        pretrainMix: 0.1,
        outDir: tmpdir(),
        quiet: true,
      }),
    ).rejects.toThrow(/pretraining mix needs a built-in text model's corpus; "tiny-random" has none/);
  }, 180_000);

  it("an unknown setting is refused by name", async () => {
    await expect(
      runExperiment({ name: "chess", seed: 1, steps: 1, outDir: tmpdir(), quiet: true }),
    ).rejects.toThrow(/unknown setting "chess"/);
  });
});
