// The optional CUDA addon on a machine without a GPU or driver: where nvcc was
// found at install it must have been built (a missing file is a failure, not a
// skip), load in Node, link the CUDA runtime statically, and report the missing
// driver (cudaErrorInsufficientDriver, 35; or cudaErrorNoDevice, 100) in one
// line; the worker's device choice falls back, or refuses, with that line. The
// build script skips in one line, exit 0, where there is no nvcc.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { selectBackend } from "./backend/select.ts";
import { CUDA_ADDON_FILE, loadCudaAddon, loadCudaAddonFrom } from "./cuda-addon.ts";
import { readKernelsEnv } from "./env.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BUILD_CUDA = path.join(PACKAGE_DIR, "scripts", "build-cuda.mjs");
const SKIPPED = "kernels: nvcc not found; the CUDA addon was skipped (the CPU kernels are built)";
const NO_DRIVER = /^(cudaErrorInsufficientDriver \(35\)|cudaErrorNoDevice \(100\)): \S.*$/;

function buildScript(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [BUILD_CUDA, ...args], { cwd: PACKAGE_DIR, encoding: "utf8", env });
}

/** The nvcc the build script would use here (the same search as at install), or null. */
const nvcc = buildScript(["--print-nvcc"]).stdout.trim() || null;
/** A machine with an NVIDIA GPU and its driver (a lent device), where probe() finds it instead. */
const hasDriver = existsSync("/dev/nvidiactl");
// The CUDA addon does not depend on the CPU kernels' instruction set; once per suite run.
const forcedIsa = readKernelsEnv().OPENTINKER_KERNELS_ISA;

describe.skipIf(forcedIsa !== undefined)("the CUDA addon (build-cuda/opentinker_kernels_cuda.node)", () => {
  it.skipIf(nvcc === null)(
    "was built at install, since nvcc is here, and links the CUDA runtime statically",
    () => {
      if (!existsSync(CUDA_ADDON_FILE)) {
        expect.fail(
          `nvcc is at ${nvcc} but ${CUDA_ADDON_FILE} was not built: run \`npm run build:cuda -w @opentinker/kernels\` and read its line`,
        );
      }
      const ldd = spawnSync("ldd", [CUDA_ADDON_FILE], { encoding: "utf8" });
      expect(ldd.status, ldd.stderr).toBe(0);
      expect(ldd.stdout).not.toMatch(/libcudart/);
      expect(ldd.stdout).not.toMatch(/libcuda\.so/);
      // It carries the kernels' device code (a fat binary) and their launchers.
      const sections = spawnSync("readelf", ["-S", "-W", CUDA_ADDON_FILE], { encoding: "utf8" });
      expect(sections.stdout).toContain(".nv_fatbin");
      const symbols = spawnSync("nm", [CUDA_ADDON_FILE], { encoding: "utf8" });
      expect(symbols.stdout).toMatch(/ ot_cuda_rmsnorm_f32$/m);
      expect(symbols.stdout).toMatch(/ot_rmsnorm_f32_kernel/);
    },
  );

  it.skipIf(nvcc === null || hasDriver)(
    "loads in a plain Node process and probe() reports the missing driver in one line",
    () => {
      const script = `const a = require(${JSON.stringify(CUDA_ADDON_FILE)}); let opened = null; try { a.openDevice(0); } catch (e) { opened = e.message; } process.stdout.write(JSON.stringify({ probe: a.probe(), launchers: a.launchers, opened }));`;
      const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      const { probe, launchers, opened } = JSON.parse(run.stdout);
      // Opening a device without a driver is one line naming it and the error.
      expect(opened).toBe(`cuda:0: ${probe.error}`);
      // Every launcher kernels/launchers.h declares is linked in and listed.
      const declared = [
        ...readFileSync(path.join(PACKAGE_DIR, "cuda", "kernels", "launchers.h"), "utf8").matchAll(
          /cudaError_t ot_cuda_(\w+)\(/g,
        ),
      ].map((match) => match[1]);
      expect(declared.length).toBeGreaterThan(1);
      expect([...launchers].sort()).toEqual(declared.sort());
      expect(probe.ok).toBe(false);
      expect([35, 100]).toContain(probe.code);
      expect(probe.error).toMatch(NO_DRIVER);
      expect(probe.error).toContain(`(${probe.code})`);
      expect(probe.devices).toEqual([]);
      expect(probe.runtimeVersion).toBeGreaterThanOrEqual(12000);
      if (probe.code === 35) expect(probe.driverVersion).toBe(0);
    },
  );

  it.skipIf(nvcc === null || hasDriver)("loadCudaAddon() loads it here and gives the probe's reason", () => {
    const cuda = loadCudaAddon();
    expect(cuda.ok).toBe(false);
    if (cuda.ok) return;
    expect(cuda.addon).not.toBeNull();
    expect(cuda.probe?.code === 35 || cuda.probe?.code === 100).toBe(true);
    expect(cuda.reason).toBe(`CUDA: ${cuda.probe?.error}`);
    expect(cuda.reason).toMatch(/^CUDA: cudaError(InsufficientDriver \(35\)|NoDevice \(100\)): /);
    expect(cuda.reason).not.toContain("\n");
  });

  it.skipIf(nvcc === null || hasDriver)(
    "auto falls back to the CPU naming the error; cuda:0 is refused naming it",
    () => {
      const cuda = loadCudaAddon();
      if (cuda.ok) expect.fail("a device was found");
      const auto = selectBackend("auto");
      expect(auto.backend.device.kind).toBe("cpu");
      expect(auto.fallback).toBe(`device auto: no usable CUDA device (${cuda.reason}); using the CPU`);
      expect(auto.fallback).toMatch(/cudaError(InsufficientDriver \(35\)|NoDevice \(100\))/);
      expect(auto.fallback).not.toContain("\n");
      expect(() => selectBackend("cuda:0")).toThrow(
        `WORKER_DEVICE=cuda:0: no usable CUDA device 0 (${cuda.reason}); use auto or cpu`,
      );
    },
  );

  it("says in one line why there is none when the file is absent or does not load", () => {
    const absent = loadCudaAddonFrom(path.join(PACKAGE_DIR, "build-cuda", "no-such-addon.node"), true);
    expect(absent.ok).toBe(false);
    if (!absent.ok) expect(absent.reason).toMatch(/^the CUDA addon .*no-such-addon\.node does not exist$/);
    // A file that is no shared object at all.
    const dir = mkdtempSync(path.join(tmpdir(), "ot-cuda-addon-"));
    try {
      const file = path.join(dir, "broken.node");
      writeFileSync(file, "not an ELF file\n");
      const broken = loadCudaAddonFrom(file, true);
      expect(broken.ok).toBe(false);
      if (!broken.ok) {
        expect(broken.reason).toMatch(/^the CUDA addon .*broken\.node does not load: /);
        expect(broken.reason).not.toContain("\n");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the build script, with no nvcc to find, prints the one skip line and exits 0", () => {
    // A PATH without nvcc (node itself is run by its full path), no CUDA_HOME, and
    // OT_NVCC=none in place of the /usr/local/cuda fallback.
    const PATH = (process.env.PATH ?? "")
      .split(path.delimiter)
      .filter((dir) => dir && !existsSync(path.join(dir, "nvcc")))
      .join(path.delimiter);
    const env: NodeJS.ProcessEnv = { ...process.env, PATH, OT_NVCC: "none" };
    delete env.CUDA_HOME;
    const run = buildScript([], env);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(`${SKIPPED}\n`);
    expect(run.status).toBe(0);
    // --strict (npm run build:cuda) says the same, and fails.
    const strict = buildScript(["--strict"], env);
    expect(strict.stdout).toBe(`${SKIPPED}\n`);
    expect(strict.status).toBe(1);
  });
});
