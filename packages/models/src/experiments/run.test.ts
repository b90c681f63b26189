import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runExperiment } from "./run.ts";
import { SETTINGS } from "./settings.ts";

describe("the experiment runner", () => {
  for (const name of Object.keys(SETTINGS)) {
    it(`a short run of ${name} completes and writes metrics, a summary and a plot`, async () => {
      const out = await mkdtemp(path.join(tmpdir(), "ot-exp-"));
      try {
        const summary = await runExperiment({
          name,
          seed: 1,
          steps: 2,
          outDir: out,
          quiet: true,
          validateEvery: 1,
        });
        expect(summary).toMatchObject({ setting: name, seed: 1, steps: 2 });
        const lines = (await readFile(summary.files.metrics, "utf8"))
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(lines.map((l) => l.step)).toEqual([0, 1]);
        expect(lines.every((l) => typeof l["policy/version"] === "number")).toBe(true);
        expect(JSON.parse(await readFile(summary.files.summary, "utf8")).setting).toBe(name);
        expect(await readFile(summary.files.plot, "utf8")).toMatch(/^<svg[\s\S]*<polyline[\s\S]*<\/svg>$/);
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    }, 120_000);
  }

  it("an unknown setting is refused by name", async () => {
    await expect(
      runExperiment({ name: "chess", seed: 1, steps: 1, outDir: tmpdir(), quiet: true }),
    ).rejects.toThrow(/unknown setting "chess"/);
  });
});
