import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type Bf16Report, bf16KernelReport, randomBf16, widenBf16 } from "./gemm-bf16.cases.ts";
import { embedding } from "./ops/elementwise.ts";
import { linear, linearBackwardInput } from "./ops/gemm.ts";
import { linearBf16 } from "./ops/gemm-bf16.ts";
import { randomF32, rng } from "./test-utils.ts";

const CASES = path.join(path.dirname(fileURLToPath(import.meta.url)), "gemm-bf16.cases.ts");

function expectReport(report: Bf16Report): void {
  for (const { name, excess } of report.accuracy) expect(excess, name).toBeLessThanOrEqual(0);
  for (const { name, same } of report.invariant) expect(same, name).toBe(true);
}

describe("bf16-weight kernels", () => {
  it("forward, input gradient and embedding match an f64 reference; rows do not depend on the batch", () => {
    expectReport(bf16KernelReport());
  });

  // Each instruction set forced in a child process (the AVX2 path on an AVX-512 machine too).
  for (const isa of ["avx2", "avx512", "amx"] as const) {
    it(`the same holds with OPENTINKER_KERNELS_ISA=${isa}`, (context) => {
      let stdout: string;
      try {
        stdout = execFileSync(process.execPath, ["--import", "tsx", CASES], {
          encoding: "utf8",
          env: { ...process.env, OPENTINKER_KERNELS_ISA: isa },
        });
      } catch (error) {
        const stderr = String((error as { stderr?: unknown }).stderr ?? "");
        // A CPU without AVX-512 (or AMX) refuses the forced path: nothing to test there.
        if (isa !== "avx2" && /this one lacks them/.test(stderr)) context.skip();
        throw error;
      }
      const report = JSON.parse(stdout) as Bf16Report;
      expect(report.isa).toBe(isa);
      expectReport(report);
    }, 60_000);
  }

  it("linear, linearBackwardInput and embedding take a bf16 weight as they take an f32 one", () => {
    const random = rng(4);
    const [rows, dIn, dOut] = [5, 40, 19];
    const x = randomF32(rows * dIn, random);
    const w = randomBf16(dOut * dIn, random);
    const wide = widenBf16(w);
    const viaBf16 = new Float32Array(rows * dOut);
    const viaF32 = new Float32Array(rows * dOut);
    linear(x, w, viaBf16, rows, dIn, dOut, false, "auto");
    linear(x, wide, viaF32, rows, dIn, dOut, false, "rows");
    for (let i = 0; i < viaF32.length; i++) expect(viaBf16[i]).toBeCloseTo(viaF32[i] as number, 5);
    const dy = randomF32(rows * dOut, random);
    const dxBf16 = new Float32Array(rows * dIn);
    const dxF32 = new Float32Array(rows * dIn);
    linearBackwardInput(dy, w, dxBf16, rows, dIn, dOut);
    linearBackwardInput(dy, wide, dxF32, rows, dIn, dOut);
    for (let i = 0; i < dxF32.length; i++) expect(dxBf16[i]).toBeCloseTo(dxF32[i] as number, 5);
    const ids = Int32Array.from([1, 4]);
    const out = new Float32Array(2 * dIn);
    embedding(ids, w, out, 2, dOut, dIn);
    expect(Array.from(out)).toEqual(
      Array.from(wide.subarray(dIn, 2 * dIn)).concat(Array.from(wide.subarray(4 * dIn, 5 * dIn))),
    );
  });

  it("refuses a wrong dtype, a wrong length and an id out of range", () => {
    const x = new Float32Array(6);
    const y = new Float32Array(4);
    const asF32 = new Float32Array(6) as unknown as Uint16Array;
    expect(() => linearBf16(x, asF32, y, 2, 3, 2)).toThrow(/linearBf16: w must be a Uint16Array/);
    expect(() => linearBf16(x, new Uint16Array(5), y, 2, 3, 2)).toThrow(/w has length 5, expected 6/);
    expect(() => embedding(Int32Array.from([7]), new Uint16Array(6), new Float32Array(3), 1, 2, 3)).toThrow(
      /ids\[0\] is 7, expected \[0, 2\)/,
    );
  });
});
