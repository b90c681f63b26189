// The CPU part of the device check (scripts/device-check.sh --cpu, issue 46), so
// that it cannot rot between the times a GPU is lent: where nvcc is, the
// standalone device-check program (cuda/device-check/) must build for sm_80 and
// sm_90a with warnings as errors (a failure, not a skip), run without a driver,
// and print one JSON line naming why there is no device; the torch peer must
// byte-compile. What it does on a GPU is checked only on a lent device
// (cuda/device-check/README.md).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readKernelsEnv } from "./env.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SCRIPT = path.join(PACKAGE_DIR, "scripts", "device-check.sh");
const PROGRAM = path.join(PACKAGE_DIR, "cuda", "device-check", "build", "device_check");
const NO_DRIVER = /^cudaError(InsufficientDriver \(35\)|NoDevice \(100\)): \S.*$/;

/** The nvcc the CUDA addon's build would use here (the same search), or null. */
const nvcc =
  spawnSync(process.execPath, [path.join(PACKAGE_DIR, "scripts", "build-cuda.mjs"), "--print-nvcc"], {
    cwd: PACKAGE_DIR,
    encoding: "utf8",
  }).stdout.trim() || null;
const hasDriver = existsSync("/dev/nvidiactl");
const forcedIsa = readKernelsEnv().OPENTINKER_KERNELS_ISA;

function deviceCheck(args: string[], env: NodeJS.ProcessEnv) {
  return spawnSync("bash", [SCRIPT, ...args], { cwd: PACKAGE_DIR, encoding: "utf8", env, timeout: 600_000 });
}

function oneJsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.split("\n").filter((l) => l !== "");
  expect(lines, `stdout must be one JSON line:\n${stdout}`).toHaveLength(1);
  return JSON.parse(lines[0] ?? "") as Record<string, unknown>;
}

describe.skipIf(forcedIsa !== undefined)(
  "the device check's CPU part (scripts/device-check.sh --cpu)",
  () => {
    it.skipIf(nvcc === null)(
      "builds the device-check program for sm_80 and sm_90a, runs its probe, and prints one JSON line",
      () => {
        const run = deviceCheck(["--cpu"], { ...process.env, NVCC: nvcc ?? "" });
        if (run.status !== 0) {
          expect.fail(
            `device-check.sh --cpu exited ${run.status} (nvcc is at ${nvcc}):\n${run.stdout}\n${run.stderr}`,
          );
        }
        const line = oneJsonLine(run.stdout);
        expect(existsSync(PROGRAM)).toBe(true);
        expect(line.mode).toBe("cpu");
        expect((line.build as { targets: string[] }).targets).toEqual(["sm_80", "sm_90a", "compute_80"]);
        expect(line.peer_py_compile).toBe("ok");
        expect(line.cuda_runtime).toBeGreaterThanOrEqual(12000);
        if (hasDriver) {
          expect(typeof line.device).toBe("string");
          expect(line.probe).toBe(true);
        } else {
          expect(line.device).toBeNull();
          expect(line.reason).toMatch(NO_DRIVER);
        }
      },
      600_000,
    );

    it.skipIf(nvcc === null || hasDriver)(
      "without --cpu and without a driver, it says so in one JSON line and exits 1 (the GPU path's start)",
      () => {
        const syntax = spawnSync("bash", ["-n", SCRIPT], { encoding: "utf8" });
        expect(syntax.status, syntax.stderr).toBe(0);
        const run = deviceCheck([], { ...process.env, NVCC: nvcc ?? "" });
        expect(run.status, run.stderr).toBe(1);
        const line = oneJsonLine(run.stdout);
        expect(line.mode).toBe("gpu");
        expect(line.device).toBeNull();
        expect(line.reason).toMatch(NO_DRIVER);
      },
      600_000,
    );

    it("says in one JSON line, exit 1, when nvcc fails or is absent", () => {
      const dir = mkdtempSync(path.join(tmpdir(), "ot-device-check-"));
      try {
        const fake = path.join(dir, "nvcc");
        writeFileSync(
          fake,
          "#!/bin/sh\necho 'Build fake'\n[ \"$1\" = --version ] && exit 0\necho 'fake nvcc: no' >&2\nexit 1\n",
        );
        chmodSync(fake, 0o755);
        const env = { ...process.env, NVCC: fake, OT_DEVICE_CHECK_BUILD: path.join(dir, "build") };
        const broken = deviceCheck(["--cpu"], env);
        expect(broken.status).toBe(1);
        const line = oneJsonLine(broken.stdout);
        expect(line.device).toBeNull();
        expect(line.build).toBe("failed");
        expect(line.reason).toMatch(/^nvcc failed on: /);
        expect(broken.stderr).toContain("fake nvcc: no");

        const absent = deviceCheck(["--cpu"], { ...process.env, NVCC: "", OT_NVCC: "none" });
        expect(absent.status).toBe(1);
        expect(oneJsonLine(absent.stdout).reason).toBe("nvcc not found (OT_NVCC=none)");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
