import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  checkRun,
  malformedWhere,
  regenerateResults,
  resultsTable,
  riseZ,
  spliceResults,
  TARGET,
  trainingSeconds,
} from "./results.ts";
import type { ExperimentSummary, RunSummary } from "./run.ts";
import { CHECK_BATCHES } from "./train-setting.ts";

const run = (over: Partial<RunSummary>): RunSummary => ({
  setting: "s",
  metric: "reward/mean",
  validationStart: 0.2,
  validationEnd: 0.45,
  malformedStart: 0.02,
  malformedEnd: 0.02,
  checkEpisodes: 1024,
  validationMetrics: { start: {}, end: {} },
  stateSha256: "",
  snapshotChecksum: "",
  best: { step: 300, version: 5, value: 0.45, checksum: "" },
  ...over,
});

describe("the results target", () => {
  it("holds for a gain of 20 points or more, with no rise in malformed actions", () => {
    expect(checkRun(run({}), 600)).toMatchObject({ met: true, misses: [] });
    // 21 → 31 of 1,024 is within chance (z ≈ 1.8); 21 → 51 is not.
    expect(checkRun(run({ malformedEnd: 0.03 }), 600).met).toBe(true);
    expect(checkRun(run({ malformedStart: 0, malformedEnd: 0 }), 600).met).toBe(true);
  });

  it("counts a rise in malformed actions when chance would explain it less than once in a hundred", () => {
    expect(riseZ(0.02, 0.02, 1024)).toBe(0);
    expect(riseZ(0.02, 0.01, 1024)).toBeLessThan(0);
    // The full-parameter SFT->RL rise once rescored on 2,048 episodes: 9 → 37.
    expect(riseZ(9 / 2048, 37 / 2048, 2048)).toBeGreaterThan(TARGET.malformedZ);
    // The same rates on 128 episodes are not told apart from chance.
    expect(riseZ(9 / 2048, 37 / 2048, 128)).toBeLessThan(TARGET.malformedZ);
  });

  it("names each way a run falls short", () => {
    expect(checkRun(run({ validationEnd: 0.39 }), 600).misses).toEqual(["gain +19.0 < +20"]);
    expect(checkRun(run({ malformedEnd: 0.05 }), 600).misses).toEqual(["malformed rose 2.0 % → 5.0 %"]);
    expect(checkRun(run({ best: { step: 0, version: 1, value: 0.1, checksum: "" } }), 600).misses).toEqual([
      "best kept below the start",
    ]);
    expect(checkRun(run({}), 1300).misses).toEqual(["took 1300 s"]);
  });

  it("says where the end's malformed actions fell, input by input", () => {
    expect(malformedWhere(run({}))).toBeNull();
    const end = [
      { input: "What is 12 - 1?", malformed: 19, actions: 31, example: "11-<|im_end|>" },
      { input: "What is 9 + 12?", malformed: 1, actions: 22, example: "2-1<|im_end|>" },
    ];
    expect(malformedWhere(run({ malformedEnd: 20 / 1024, malformedInputs: { start: [], end } }))).toBe(
      'the end\'s 20 malformed by input, most first: `"What is 12 - 1?"` 19 of its 31 (e.g. `"11-<|im_end|>"`); `"What is 9 + 12?"` 1 of its 22 (e.g. `"2-1<|im_end|>"`).',
    );
  });

  /** A pair's summary: a member of 800 steps ("long") and one of 300 ("short"). */
  const pairSummary = (over: Partial<ExperimentSummary>): ExperimentSummary => ({
    ...run({ setting: "pair" }),
    seed: 1,
    steps: 800,
    model: "m",
    overrides: {},
    seconds: 700,
    machine: { cpu: "cpu", kernels: {} as ExperimentSummary["machine"]["kernels"] },
    members: [run({ setting: "long", steps: 800 }), run({ setting: "short", steps: 300 })],
    files: { metrics: "", summary: "", plot: "", best: [], end: [] },
    ...over,
  });
  const memberRows = (table: string) => table.split("\n").filter((l) => /^\| (long|short) /.test(l));

  it("a pair's rows give each member's own steps", () => {
    const rows = memberRows(resultsTable("pair", "cmd", [pairSummary({})]));
    expect(rows.map((l) => l.split(" | ")[2])).toEqual(["800", "300"]);
  });

  it("a pair's time is training both, without the solo rerun that checks isolation", () => {
    const pair = pairSummary({
      seconds: 1300,
      isolation: { aloneStateSha256: "a", aloneSnapshotChecksum: "b", identical: true, seconds: 400 },
    });
    expect(trainingSeconds(pair)).toBe(900);
    const table = resultsTable("pair", "cmd", [pair]);
    expect(memberRows(table).map((l) => l.split(" | ").slice(-2))).toEqual([
      ["900 s", "met |"],
      ["900 s", "met |"],
    ]);
    expect(table).toContain("byte-identical to its solo rerun (400 s, not in the time column).");
    // Without the rerun's own time (older summaries) the whole run counts, as before.
    const older = { aloneStateSha256: "a", aloneSnapshotChecksum: "b", identical: true };
    expect(trainingSeconds({ ...pair, isolation: older })).toBe(1300);
  });

  it("a setting's block is replaced between its markers, and only there", () => {
    const doc = "a\n<!-- results:x -->\nold\n<!-- /results:x -->\nb";
    expect(spliceResults(doc, "x", "new\n")).toBe("a\n<!-- results:x -->\n\nnew\n\n<!-- /results:x -->\nb");
    expect(spliceResults(doc, "y", "new\n")).toBeNull();
  });

  it("one command writes a setting's table, summaries and plots, and its block in the document", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "ot-results-"));
    try {
      const docsDir = path.join(root, "docs", "results");
      const document = path.join(root, "docs", "results.md");
      await mkdir(path.dirname(document), { recursive: true });
      await writeFile(
        document,
        "# Results\n\n<!-- results:arithmetic-lora-rl -->\nold\n<!-- /results:arithmetic-lora-rl -->\n\nafter\n",
      );
      await regenerateResults({
        document,
        setting: "arithmetic-lora-rl",
        seeds: [1, 2],
        steps: 2,
        docsDir,
        outRoot: path.join(root, "out"),
        command: "npm run results -- arithmetic-lora-rl --steps 2",
      });
      expect((await readdir(docsDir)).sort()).toEqual([
        "arithmetic-lora-rl-seed1.svg",
        "arithmetic-lora-rl-seed2.svg",
        "arithmetic-lora-rl.json",
        "arithmetic-lora-rl.md",
      ]);
      const table = await readFile(path.join(docsDir, "arithmetic-lora-rl.md"), "utf8");
      expect(table).toContain("generated by `npm run results -- arithmetic-lora-rl --steps 2`");
      expect(table.split("\n").filter((l) => l.startsWith("| arithmetic-lora-rl | "))).toHaveLength(2);
      // By default the start and end checks are CHECK_BATCHES batches of 128 episodes.
      expect(table).toContain(`of ${(CHECK_BATCHES * 128).toLocaleString("en")} |`);
      const updated = await readFile(document, "utf8");
      expect(updated).not.toContain("old");
      expect(updated).toContain("](results/arithmetic-lora-rl-seed2.svg)");
      expect(updated.endsWith("<!-- /results:arithmetic-lora-rl -->\n\nafter\n")).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }, 120_000);
});
