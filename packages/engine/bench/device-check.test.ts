// The engine's device check, dry-run without a GPU (issue 47): the program a
// lent GPU runs is bundled as it would be for the device and run on the
// emulated CUDA device with tiny shapes; its one JSON line must hold the
// agreement with the CPU and every figure the GPU run reports.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CUDA_EMU_ADDON_FILE } from "@opentinker/kernels/testing";
import { describe, expect, it } from "vitest";

const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "scripts", "device-check.sh");

describe.skipIf(!existsSync(CUDA_EMU_ADDON_FILE))("the engine's device check, on the emulated device", () => {
  it("bundles, runs, agrees with the CPU and prints one JSON line of figures", () => {
    const run = spawnSync("bash", [SCRIPT, "--cpu"], { encoding: "utf8", timeout: 240_000 });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const report = JSON.parse(lines[0] as string);
    expect(report.ok).toBe(true);
    expect(report.device).toBe("cuda:0");
    expect(report.agreement.f32.maxAbsDiff).toBeLessThanOrEqual(1e-4);
    expect(report.agreement.bf16.maxAbsDiff).toBeLessThanOrEqual(2e-2);
    expect(report.copyGBps).toBeGreaterThan(0);
    const [tiny] = report.models;
    expect(tiny.decode.batch1TokensPerS).toBeGreaterThan(0);
    expect(tiny.decode.adapters4OverBatch1).toBeGreaterThan(0);
    expect(tiny.decode.adapters4OverNoAdapters).toBeGreaterThan(0);
    expect(tiny.training.loraR16TokensPerS).toBeGreaterThan(0);
  }, 300_000);
});
