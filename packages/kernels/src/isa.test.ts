// The kernels' instruction-set paths (src/cpu/isa.h). A plain run takes the CPU's
// best path; these tests check the OPENTINKER_KERNELS_ISA switch, that the paths
// give the same f32 bits where the CPU has several, and rerun every kernel test
// with each lesser path forced (the AVX2 path on an AVX-512 machine; on an AMX
// machine also the AVX-512 path, whose bf16 products differ from AMX's).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isasUpTo, readKernelsEnv } from "./env.ts";
import { kernelInfo } from "./index.ts";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const INDEX = path.join(PACKAGE_DIR, "src", "index.ts");

/** Runs an ES module snippet (with the package's index as `kernels`) under the given ISA setting. */
function runWith(isa: string, body: string) {
  const source = `import * as kernels from ${JSON.stringify(INDEX)};\n${body}`;
  return spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", source], {
    encoding: "utf8",
    env: { ...process.env, OPENTINKER_KERNELS_ISA: isa },
  });
}

// Inside a forced run (the rerun below) there is nothing more to check here.
const forced = readKernelsEnv().OPENTINKER_KERNELS_ISA;
const best = kernelInfo().isa;
const paths = isasUpTo(best);

describe.skipIf(forced !== undefined || best === undefined)("instruction-set paths", () => {
  for (const isa of paths) {
    it(`OPENTINKER_KERNELS_ISA=${isa} runs the ${isa} path and info() says so`, () => {
      const run = runWith(isa, "process.stdout.write(JSON.stringify(kernels.kernelInfo()));");
      expect(run.stderr).toBe("");
      const info = JSON.parse(run.stdout) as { isa: string; simd: string };
      expect(info.isa).toBe(isa);
      expect(info.simd).toBe(isa === "avx2" ? "avx2+fma" : "avx512");
    });
  }

  it("refuses an unknown OPENTINKER_KERNELS_ISA, naming the allowed values", () => {
    const run = runWith("avx9", "kernels.kernelInfo();");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(
      'OPENTINKER_KERNELS_ISA must be one of avx2, avx512, amx (or unset for the CPU\'s best), got "avx9"',
    );
  });

  it.skipIf(best !== "avx2")("refuses OPENTINKER_KERNELS_ISA=avx512 on a CPU without AVX-512", () => {
    const run = runWith("avx512", "kernels.kernelInfo();");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/OPENTINKER_KERNELS_ISA=avx512 cannot be used here: .*lacks them/);
  });

  it.skipIf(best === "amx")("refuses OPENTINKER_KERNELS_ISA=amx on a CPU (or kernel) without AMX", () => {
    const run = runWith("amx", "kernels.kernelInfo();");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(
      /OPENTINKER_KERNELS_ISA=amx cannot be used here: .*AMX-TILE, AMX-BF16.*lacks them/,
    );
  });

  // Every tile sums each element in one order (gemm_microkernel.h), so the paths agree bit for bit.
  it.skipIf(paths.length < 2)(
    "the batch-invariant, prepacked and own GEMMs give the same bits on every path",
    () => {
      const body = `
      const { createHash } = await import("node:crypto");
      const hash = createHash("sha256");
      let seed = 9;
      const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
      for (const [m, n, k, transA, transB, backend] of [
        [1, 100, 257, false, true, "rows"], [37, 67, 600, false, true, "rows"], [130, 47, 520, false, true, "rows"],
        [61, 129, 257, false, false, "own"], [61, 129, 257, true, false, "own"], [40, 33, 300, true, true, "own"],
      ]) {
        const a = Float32Array.from({ length: m * k }, random);
        const b = Float32Array.from({ length: k * n }, random);
        const c = Float32Array.from({ length: m * n }, random);
        kernels.gemm(m, n, k, a, b, c, { transA, transB, alpha: 0.75, beta: 0.5, backend });
        hash.update(new Uint8Array(c.buffer));
        if (backend === "rows") {
          // The same product over the weight packed once (each path packs its own panels).
          const y = new Float32Array(m * n);
          kernels.linearPacked(a, kernels.packWeight(b, n, k), y, m);
          hash.update(new Uint8Array(y.buffer));
        }
      }
      process.stdout.write(hash.digest("hex"));`;
      const [avx2, ...wider] = paths.map((isa) => runWith(isa, body));
      expect(avx2?.stderr).toBe("");
      expect(avx2?.stdout).toMatch(/^[0-9a-f]{64}$/);
      for (const run of wider) expect(run.stdout).toBe(avx2?.stdout);
    },
  );

  // Every path below the best, each in its own rerun of the whole suite.
  for (const isa of paths.slice(0, -1)) {
    it(`every kernel test passes with OPENTINKER_KERNELS_ISA=${isa} forced`, () => {
      const vitest = path.resolve(PACKAGE_DIR, "../../node_modules/vitest/vitest.mjs");
      const run = spawnSync(
        process.execPath,
        [vitest, "run", "--config", path.join(PACKAGE_DIR, "vitest.config.ts")],
        {
          cwd: PACKAGE_DIR,
          encoding: "utf8",
          env: { ...process.env, OPENTINKER_KERNELS_ISA: isa, NO_COLOR: "1", FORCE_COLOR: "0" },
        },
      );
      if (run.status !== 0)
        expect.fail(
          `the kernels' tests failed on the ${isa} path:\n${run.stdout.slice(-4000)}${run.stderr.slice(-2000)}`,
        );
      expect(run.stdout).toMatch(/Tests\s+\d+ passed/);
    }, 900_000);
  }
});
